package probes

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

// Report is a run of the memory and overload plan.
type Report struct {
	Start         time.Time           `json:"start"`
	Machine       harness.Machine     `json:"machine"`
	RSSCapMiB     float64             `json:"rss_cap_mib"`
	FlushInterval time.Duration       `json:"flush_interval_ns"`
	Concurrency   int                 `json:"concurrency"`
	Results       []*solo.ProbeResult `json:"results"`
}

// WriteMarkdown writes the report: every figure beside the probe and collector it comes from.
func (r *Report) WriteMarkdown(w io.Writer) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "# testbed: memory and overload probes\n\n")
	m := r.Machine
	fmt.Fprintf(b, "Run started %s on %d CPUs (%s), %.1f GiB, %s. Each collector runs alone, one after the other, "+
		"as a child process (GOMAXPROCS=%s unless a probe says otherwise); it is killed when its RSS passes %.0f MiB. "+
		"Flush interval %s unless a probe says otherwise; %d OTLP requests in flight.\n\n",
		r.Start.Format(time.RFC3339), m.CPUs, m.Model(), m.MemGiB, m.OS, harness.CollectorGOMAXPROCS,
		r.RSSCapMiB, r.FlushInterval, r.Concurrency)
	for _, res := range r.Results {
		writeProbe(b, res)
	}
	return b.Flush()
}

func writeProbe(b *bufio.Writer, res *solo.ProbeResult) {
	fmt.Fprintf(b, "## %s\n\n%s. Started %s, load average %.2f.\n\n", res.Probe.Name, res.Title,
		res.Start.Format("15:04:05Z"), res.LoadAverage)
	if res.Error != "" {
		fmt.Fprintf(b, "**Not measured:** %s\n\n", res.Error)
	}
	switch res.Probe.Kind {
	case KindMemory:
		writeMemory(b, res)
	case KindScrapeLoad:
		writeScrapeLoad(b, res)
	case KindFloor:
		writeFloor(b, res)
	case KindStaleness:
		writeStaleness(b, res)
	}
	loads := make([]string, 0, len(res.Runs))
	for _, run := range res.Runs {
		loads = append(loads, fmt.Sprintf("%s %.2f", run.Label(), run.LoadAverage))
	}
	if len(loads) > 0 {
		fmt.Fprintf(b, "\nHost load average (1 min) as each run started: %s.\n\n", strings.Join(loads, ", "))
	}
	for _, run := range res.Runs {
		if run.Error != "" {
			fmt.Fprintf(b, "- %s: error: %s\n", run.Label(), run.Error)
		}
		if run.Placement != "" {
			fmt.Fprintf(b, "- %s: %s\n", run.Label(), run.Placement)
		}
		if steal := phaseSteal(run.Phases); steal != "" {
			fmt.Fprintf(b, "- %s: CPU time stolen by the hypervisor from its CPUs (the host's when not pinned), by phase: %s\n", run.Label(), steal)
		}
		if run.StopSeconds > 0 {
			fmt.Fprintf(b, "- %s: graceful shutdown took %.1f s\n", run.Label(), run.StopSeconds)
		}
		if run.Killed != nil {
			fmt.Fprintf(b, "- %s: killed at %.2f GiB RSS after %.0f s\n", run.Label(), run.Killed.RSSMiB/1024, run.Killed.At)
		}
	}
	names := make([]string, len(res.Runs))
	for i, run := range res.Runs {
		names[i] = run.Label()
	}
	solo.WriteCPUProfiles(b, res.Runs, names)
	b.WriteString("\n")
}

func writeMemory(b *bufio.Writer, res *solo.ProbeResult) {
	b.WriteString("| collector | spans/s | CPU % | RSS max (MiB) | RSS per series (bytes) | counted / sent | gzip scrapes ok / empty / failed | scrape p50 (ms) | scrape p99 (ms) | headers p50 / p99 (ms) | gzip body (bytes) |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, run := range res.Runs {
		if len(run.Phases) == 0 {
			continue
		}
		ph := run.Phases[0]
		fmt.Fprintf(b, "| %s | %.0f | %.0f | %.0f | %.0f | %s | %d / %d / %d | %s | %s | %s / %s | %d |\n", run.Collector, ph.SpansPerSec, ph.CPUPercent,
			run.RSSMaxMiB, run.RSSMaxMiB*(1<<20)/float64(run.Series), countedCell(run), ph.Scrapes.OK, ph.Scrapes.Empty, ph.Scrapes.Failed,
			latency(ph.Scrapes, ph.Scrapes.P50), latency(ph.Scrapes, ph.Scrapes.P99),
			latency(ph.Scrapes, ph.Scrapes.HeadersP50), latency(ph.Scrapes, ph.Scrapes.HeadersP99), ph.Scrapes.WireBytes)
	}
	for _, run := range res.Runs {
		if run.FirstRenderSeconds > 0 {
			fmt.Fprintf(b, "\n%s: the first render after the first flush took %.2f s and was seen done %.0f s after that flush (own telemetry, polled each second).\n",
				run.Collector, run.FirstRenderSeconds, run.FirstRenderAfter)
		}
		if run.Renders > 0 {
			fmt.Fprintf(b, "\n%s: %d renders of the snapshot from the second flush to the end of the load, %.2f s each on average (own telemetry).\n",
				run.Collector, run.Renders, run.RenderSeconds)
		}
	}
	b.WriteString("\nRSS after each flush (a flush is a delivery of points to the metrics exporter, from its own telemetry):\n\n")
	for _, run := range res.Runs {
		fmt.Fprintf(b, "- %s:", run.Collector)
		if len(run.Flushes) == 0 {
			b.WriteString(" no flush delivered")
		}
		for i, f := range run.Flushes {
			fmt.Fprintf(b, " #%d at %.0f s (%d points): %.0f MiB, max %.0f MiB until the next (%.0f bytes/series);", i+1,
				f.At, f.Points, f.RSSMiB, f.RSSMaxMiB, f.RSSMaxMiB*(1<<20)/float64(run.Series))
		}
		b.WriteString("\n")
	}
	for _, run := range res.Runs {
		if run.HeapProfile == "" {
			continue
		}
		fmt.Fprintf(b, "\nHeap profile of %s, taken after its second flush or with -heap-profile-end in the last second of the load (or at 85 %% of the RSS cap, or at the end of the load; the time is in the profile) (`%s`): %d bytes in use, %.0f bytes per series.\n\n```\n%s\n```\n",
			run.Collector, run.HeapProfile, run.HeapInuseBytes, float64(run.HeapInuseBytes)/float64(run.Series), run.HeapTop)
		writeMemStats(b, run.MemStats)
	}
}

// countedCell is a run's "counted / sent" cell: "not checked" when the probe did not check it.
func countedCell(run solo.ProbeRun) string {
	switch {
	case run.Sent == 0 && run.Counted == 0:
		return "not checked"
	case run.Counted < 0:
		return fmt.Sprintf("unread / %d", run.Sent)
	}
	return fmt.Sprintf("%d / %d", run.Counted, run.Sent)
}

func writeScrapeLoad(b *bufio.Writer, res *solo.ProbeResult) {
	b.WriteString("| collector | phase | spans/s | CPU % | RSS max (MiB) | RSS end (MiB) | scrapes 200 / empty 200 / 503 / other / failed | scrape p50 (ms) | scrape p99 (ms) |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, run := range res.Runs {
		for _, ph := range run.Phases {
			sc := ph.Scrapes
			fmt.Fprintf(b, "| %s | %s | %.0f | %.0f | %.0f | %.0f | %d / %d / %d / %d / %d | %s | %s |\n", run.Collector, ph.Name,
				ph.SpansPerSec, ph.CPUPercent, ph.RSSMaxMiB, ph.RSSEndMiB, sc.OK, sc.Empty, sc.Unavailable, sc.OtherStatus, sc.Failed,
				latency(sc, sc.P50), latency(sc, sc.P99))
		}
		if len(run.Phases) < 2 || run.Phases[0].SpansPerSec <= 0 {
			continue
		}
		for _, ph := range run.Phases[1:] {
			fmt.Fprintf(b, "| %s | %s ÷ no scrapes | %.2f× | | %.2f× | | | | |\n", run.Collector, ph.Name,
				ph.SpansPerSec/run.Phases[0].SpansPerSec, ph.RSSMaxMiB/run.Phases[0].RSSMaxMiB)
		}
	}
}

func writeFloor(b *bufio.Writer, res *solo.ProbeResult) {
	// A side that waited for load (CPU well under 100 %) shows a rate below what it can take; its
	// CPU time per span is still what each span cost it, so the report gives both ratios.
	summary := solo.SummarizeFloor(res.Runs)
	type key struct{ series, round int }
	rounds := map[key]solo.FloorRound{}
	for _, s := range summary {
		for _, r := range s.Rounds {
			rounds[key{s.Series, r.Round}] = r
		}
	}
	b.WriteString("Every run, in the order they ran; the ratios on ours' row are against the floor of the same round.\n\n")
	b.WriteString("| series | round | collector | spans/s | CPU % | CPU µs/span | RSS max (MiB) | ours ÷ floor, rate | floor ÷ ours, CPU per span |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, run := range res.Runs {
		if len(run.Phases) == 0 {
			continue
		}
		ph := run.Phases[0]
		rate, cost := "", ""
		if r, ok := rounds[key{run.Series, run.Round}]; ok && run.Collector == "ours" {
			rate, cost = fmt.Sprintf("%.3f", r.RateRatio), fmt.Sprintf("%.3f", r.CostRatio)
		}
		fmt.Fprintf(b, "| %d | %d | %s | %.0f | %.0f | %.3f | %.0f | %s | %s |\n", run.Series, run.Round, run.Collector, ph.SpansPerSec,
			ph.CPUPercent, ph.CPUPerSpan()*1e6, ph.RSSMaxMiB, rate, cost)
	}
	if len(summary) == 0 {
		return
	}
	b.WriteString("\nOver the rounds, per shape: each side's median (lowest–highest run), the ratio of the medians, each round's ratio " +
		"and their median. **Headline: floor ÷ ours in CPU per span, the median of the per-round ratios** (in bold): CPU per span " +
		"does not depend on whether the load generator kept the collector saturated, and a ratio within a round leaves out " +
		"the host's drift between rounds.\n\n")
	b.WriteString("| series | runs floor / ours | floor CPU µs/span | ours CPU µs/span | floor ÷ ours of the medians | floor ÷ ours per round | floor ÷ ours, median of the rounds |\n|---|---|---|---|---|---|---|\n")
	for _, s := range summary {
		cost := make([]string, len(s.Rounds))
		for i, r := range s.Rounds {
			cost[i] = fmt.Sprintf("%.3f", r.CostRatio)
		}
		fmt.Fprintf(b, "| %d | %d / %d | %s | %s | %s | %s | %s |\n", s.Series, s.Floor.Runs, s.Ours.Runs,
			s.Floor.CPUMicrosPerSpan.Text("%.3f"), s.Ours.CPUMicrosPerSpan.Text("%.3f"), harness.RatioCell(s.CostRatio, ""),
			harness.OrDash(strings.Join(cost, ", ")), harness.RatioCell(s.RoundCostRatio, "**"))
	}
	b.WriteString("\n| series | floor spans/s | ours spans/s | ours ÷ floor of the medians | ours ÷ floor per round | ours ÷ floor, median of the rounds |\n|---|---|---|---|---|---|\n")
	for _, s := range summary {
		rate := make([]string, len(s.Rounds))
		for i, r := range s.Rounds {
			rate[i] = fmt.Sprintf("%.3f", r.RateRatio)
		}
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s |\n", s.Series, s.Floor.SpansPerSec.Text("%.0f"), s.Ours.SpansPerSec.Text("%.0f"),
			harness.RatioCell(s.RateRatio, ""), harness.OrDash(strings.Join(rate, ", ")), harness.RatioCell(s.RoundRateRatio, ""))
	}
}

func writeStaleness(b *bufio.Writer, res *solo.ProbeResult) {
	for _, run := range res.Runs {
		st := run.Staleness
		if st == nil || st.ConsumeSeconds == 0 {
			continue
		}
		fmt.Fprintf(b, "- %s drained %d spans in %.1f s (%.0f spans/s), RSS max %.0f MiB; calls counted %d of %d.\n",
			run.Collector, st.BacklogSpans, st.ConsumeSeconds, st.SpansPerSec, run.RSSMaxMiB, st.CallsCounted, st.BacklogSpans)
		fmt.Fprintf(b, "- Flushes (every %.0f s configured): %d seen where an on-time collector makes %d; longest gap %.1f s, "+
			"so the latest flush was %.1f s late.\n", st.IntervalSeconds, len(st.Flushes), st.ExpectedFlushes,
			st.MaxGapSeconds, st.MaxLatenessSeconds)
		fmt.Fprintf(b, "- /metrics scraped every second: the page changed %d times, longest unchanged %.1f s (%d scrapes failed).\n",
			len(st.PageChanges), st.MaxPageGapSeconds, st.PageScrapesFailed)
		times := make([]string, len(st.Flushes))
		for i, f := range st.Flushes {
			times[i] = fmt.Sprintf("%.1f", f.At)
		}
		fmt.Fprintf(b, "- Flush times (s since start): %s\n", strings.Join(times, ", "))
	}
}

// latency prints a scrape percentile, or says that no scrape answered.
func latency(s solo.ScrapeStats, v harness.Millis) string {
	if s.OK == 0 {
		if s.Failed+s.Unavailable+s.OtherStatus+s.Empty > 0 {
			return "no answer"
		}
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(v))
}

// writeMemStats splits the Go runtime's share of the RSS at the profile, in MiB.
func writeMemStats(b *bufio.Writer, m map[string]float64) {
	if len(m) == 0 {
		return
	}
	const mib = 1 << 20
	fmt.Fprintf(b, "\nruntime.MemStats at the profile: live heap (HeapAlloc) %.0f MiB, next GC at %.0f MiB, heap spans in use %.0f MiB, idle %.0f MiB of which returned to the OS %.0f MiB, stacks %.0f MiB, runtime metadata (MSpan+GC+other) %.0f MiB; Sys-HeapReleased %.0f MiB (what RSS holds beyond it is off-heap); %.0f GCs, GC CPU fraction %.3f.\n",
		m["HeapAlloc"]/mib, m["NextGC"]/mib, m["HeapInuse"]/mib, m["HeapIdle"]/mib, m["HeapReleased"]/mib, m["StackInuse"]/mib,
		(m["MSpanInuse"]+m["GCSys"]+m["OtherSys"])/mib, (m["Sys"]-m["HeapReleased"])/mib, m["NumGC"], m["GCCPUFraction"])
}

// phaseSteal lists the measured phases' steal ("load 2.1%"), or "" when none was measured.
func phaseSteal(phases []solo.Phase) string {
	var parts []string
	for _, ph := range phases {
		if ph.StealPercent != nil {
			parts = append(parts, fmt.Sprintf("%s %s%%", ph.Name, solo.StealText(ph.StealPercent)))
		}
	}
	return strings.Join(parts, ", ")
}
