package native

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

// Report is a run of the native histogram probe.
type Report struct {
	Start time.Time `json:"start"`
	// Commit names the tree the binaries were built from, when known.
	Commit        string              `json:"commit,omitempty"`
	Machine       harness.Machine     `json:"machine"`
	RSSCapMiB     float64             `json:"rss_cap_mib"`
	FlushInterval time.Duration       `json:"flush_interval_ns"`
	Concurrency   int                 `json:"concurrency"`
	Configs       []string            `json:"configs"`
	Results       []*solo.ProbeResult `json:"results"`
}

// WriteMarkdown writes NATIVE.md: per side the ingest rate and memory, per side and format the
// scrapes, then the ratios the comparison is about.
func (r *Report) WriteMarkdown(w io.Writer) error {
	b := bufio.NewWriter(w)
	m := r.Machine
	fmt.Fprintf(b, "# testbed: native histograms\n\n")
	commit := ""
	if r.Commit != "" {
		commit = ", binaries built from commit " + r.Commit
	}
	fmt.Fprintf(b, "Run started %s%s on %d CPUs (%s), %.1f GiB, %s, a host shared with other jobs. Each collector runs "+
		"alone, one after the other, as a child process (GOMAXPROCS=%s), on the same pre-encoded requests; it is killed when "+
		"its RSS passes %.0f MiB. Flush interval %s; %d OTLP requests in flight. %s.\n\n",
		r.Start.Format(time.RFC3339), commit, m.CPUs, m.Model(), m.MemGiB, m.OS, harness.CollectorGOMAXPROCS, r.RSSCapMiB,
		r.FlushInterval, r.Concurrency, strings.Join(r.Configs, "; "))
	for _, res := range r.Results {
		writeNative(b, res)
	}
	return b.Flush()
}

func writeNative(b *bufio.Writer, res *solo.ProbeResult) {
	fmt.Fprintf(b, "## %s\n\n%s. Started %s, load average %.2f.\n\n", res.Probe.Name, res.Title,
		res.Start.Format("15:04:05Z"), res.LoadAverage)
	if res.Error != "" {
		fmt.Fprintf(b, "**Not measured:** %s\n\n", res.Error)
	}
	b.WriteString("Memory is the RSS once the load ended and its last flush was rendered, before any scrape, less the RSS " +
		"of the started collector before any load, over the RED series.\n\n")
	b.WriteString("spans/s is what the side acknowledged at the highest rate the load generator reached; a CPU % well " +
		"under 200 (GOMAXPROCS=2) means the side waited for load, so CPU µs per span is the steadier comparison.\n\n")
	b.WriteString("| side | spans/s | CPU % | CPU µs/span | RSS idle / settled / max (MiB) | bytes per RED series | load average |\n|---|---|---|---|---|---|---|\n")
	for _, run := range res.Runs {
		var ph solo.Phase
		if len(run.Phases) > 0 {
			ph = run.Phases[0]
		}
		n := run.Native
		if n == nil {
			n = &solo.NativeRun{}
		}
		fmt.Fprintf(b, "| %s | %.0f | %.0f | %.3f | %.0f / %.0f / %.0f | %.0f | %.2f |\n", run.Collector, ph.SpansPerSec, ph.CPUPercent,
			ph.CPUPerSpan()*1e6, n.RSSIdleMiB, n.RSSSettledMiB, run.RSSMaxMiB, n.BytesPerSeries(run.Series), run.LoadAverage)
	}
	b.WriteString("\nScrapes after the load on one connection, gzip, one a second (back to back when a scrape takes longer: ours " +
		"holds a client's scrapes to one per min_scrape_interval); the time runs from the request to the last compressed byte. " +
		"Histograms and exemplars are counted in the last protobuf body.\n\n")
	b.WriteString("| side | format | content type | scrapes | p50 (ms) | max (ms) | gzip body (bytes) | inflated (bytes) | native / classic histograms | exemplars | RSS max while scraped (MiB) |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, run := range res.Runs {
		if run.Native == nil {
			continue
		}
		for _, sc := range run.Native.Scrapes {
			hist, ex := "-", "-"
			if sc.Body != nil {
				hist = fmt.Sprintf("%d / %d", sc.Body.NativeHistograms, sc.Body.ClassicHistograms)
				ex = fmt.Sprint(sc.Body.Exemplars)
			}
			fmt.Fprintf(b, "| %s | %s | `%s` | %d | %.1f | %.1f | %d | %d | %s | %s | %.0f |\n", run.Collector, sc.Format,
				shortContentType(sc.ContentType), sc.OK, float64(sc.P50), float64(sc.Max), sc.WireBytes, sc.BodyBytes, hist, ex, sc.RSSMaxMiB)
		}
	}
	b.WriteString("\n")
	for _, line := range nativeRatios(res) {
		fmt.Fprintf(b, "- %s\n", line)
	}
	for _, run := range res.Runs {
		if run.Error != "" {
			fmt.Fprintf(b, "- %s: error: %s\n", run.Label(), run.Error)
		}
		if run.Native != nil {
			for _, sc := range run.Native.Scrapes {
				if sc.Error != "" {
					fmt.Fprintf(b, "- %s, %s scrapes: error: %s\n", run.Label(), sc.Format, sc.Error)
				}
			}
		}
		if run.Killed != nil {
			fmt.Fprintf(b, "- %s: killed at %.2f GiB RSS after %.0f s\n", run.Label(), run.Killed.RSSMiB/1024, run.Killed.At)
		}
	}
	b.WriteString("\n")
}

// shortContentType keeps the media type and the parameters that tell the formats apart.
func shortContentType(ct string) string {
	media, _, _ := strings.Cut(ct, ";")
	if strings.HasPrefix(media, protoContentType) {
		return "protobuf (delimited)"
	}
	if v := strings.Index(ct, "version="); v >= 0 {
		ver, _, _ := strings.Cut(ct[v+len("version="):], ";")
		return media + " " + ver
	}
	return media
}

// nativeRatios are the comparisons of the probe, from the sides that measured them.
func nativeRatios(res *solo.ProbeResult) []string {
	runs := map[string]solo.ProbeRun{}
	for _, run := range res.Runs {
		runs[run.Collector] = run
	}
	scrapes := func(side string, f solo.NativeFormat) (solo.NativeScrapes, bool) {
		run, ok := runs[side]
		if !ok || run.Native == nil {
			return solo.NativeScrapes{}, false
		}
		for _, sc := range run.Native.Scrapes {
			if sc.Format == f && sc.OK > 0 {
				return sc, true
			}
		}
		return solo.NativeScrapes{}, false
	}
	rate := func(side string) float64 {
		if run, ok := runs[side]; ok && len(run.Phases) > 0 {
			return run.Phases[0].SpansPerSec
		}
		return 0
	}
	perSeries := func(side string) float64 {
		run, ok := runs[side]
		if !ok {
			return 0
		}
		return run.Native.BytesPerSeries(run.Series)
	}
	var out []string
	ours, okO := scrapes("ours", solo.FormatProtobuf)
	stock, okS := scrapes("stock", solo.FormatProtobuf)
	if okO && okS && ours.P50 > 0 && ours.Max > 0 && ours.WireBytes > 0 {
		out = append(out, fmt.Sprintf("Protobuf scrape, stock ÷ ours: p50 %.0f×, max %.0f×; gzip body %.2f×.",
			float64(stock.P50/ours.P50), float64(stock.Max/ours.Max), float64(stock.WireBytes)/float64(ours.WireBytes)))
	}
	if r, s := rate("ours"), rate("stock"); r > 0 && s > 0 {
		out = append(out, fmt.Sprintf("Ingest, ours ÷ stock: %.2f× in spans/s, %.2f× in CPU per span (stock ÷ ours).", r/s,
			phaseCostRatio(runs["stock"], runs["ours"])))
	}
	if o, s := perSeries("ours"), perSeries("stock"); o > 0 && s > 0 {
		out = append(out, fmt.Sprintf("Memory per RED series, stock ÷ ours: %.2f×.", s/o))
	}
	if o, c := perSeries("ours"), perSeries("ours-classic"); o > 0 && c > 0 {
		out = append(out, fmt.Sprintf("Ours, memory per RED series, exponential ÷ classic: %.2f× (%.0f against %.0f bytes).", o/c, o, c))
	}
	classic, okC := scrapes("ours-classic", solo.FormatText)
	if okO && okC && classic.WireBytes > 0 {
		out = append(out, fmt.Sprintf("Ours, protobuf+gzip body (exponential) ÷ text+gzip body (classic): %.2f× (%d against %d bytes); inflated %.2f×.",
			float64(ours.WireBytes)/float64(classic.WireBytes), ours.WireBytes, classic.WireBytes,
			ratioOrZero(ours.BodyBytes, classic.BodyBytes)))
	}
	return out
}

func ratioOrZero(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// phaseCostRatio is a's CPU per span over b's in their load phases, 0 when either has none.
func phaseCostRatio(a, b solo.ProbeRun) float64 {
	if len(a.Phases) == 0 || len(b.Phases) == 0 || b.Phases[0].CPUPerSpan() == 0 {
		return 0
	}
	return a.Phases[0].CPUPerSpan() / b.Phases[0].CPUPerSpan()
}
