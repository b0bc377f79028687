package graph

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

// Report is a run of the service graph scenario (make testbed-graph).
type Report struct {
	Start   time.Time       `json:"start"`
	Machine harness.Machine `json:"machine"`
	// Commit names the source the binaries were built from, as the command found it.
	Commit        string        `json:"commit,omitempty"`
	RSSCapMiB     float64       `json:"rss_cap_mib"`
	FlushInterval time.Duration `json:"flush_interval_ns"`
	Concurrency   int           `json:"concurrency"`
	Result        *Result       `json:"result"`
	// Sides is the summary WriteMarkdown computes from Result.
	Sides map[string]Side `json:"sides"`
}

// Side is one collector over its rounds: medians and ranges of its measured phases.
type Side struct {
	Runs             int            `json:"runs"`
	SpansPerSec      harness.Spread `json:"spans_per_sec"`
	CPUPercent       harness.Spread `json:"cpu_percent"`
	CPUMicrosPerSpan harness.Spread `json:"cpu_us_per_span"`
	// LoadRSSMaxMiB is the largest RSS during the measured phase, RSSMaxMiB during the whole run
	// (start-up, warm-up, and the scrapes of the full page after the load included).
	LoadRSSMaxMiB harness.Spread `json:"load_rss_max_mib"`
	RSSMaxMiB     harness.Spread `json:"rss_max_mib"`
	// Exact counts the runs that counted every call (and edge); Killed those the RSS cap ended.
	Exact  int `json:"exact"`
	Killed int `json:"killed"`
}

// summarizeGraph returns each side's medians; a run without a measured phase counts only as
// killed (when it was).
func summarizeGraph(res *Result) map[string]Side {
	type acc struct{ rate, cpu, cost, loadRSS, rss []float64 }
	accs := map[string]*acc{}
	out := map[string]Side{}
	for _, name := range res.Probe.Sides {
		accs[name] = &acc{}
	}
	for _, run := range res.Runs {
		side, a := out[run.Collector], accs[run.Collector]
		if a == nil {
			continue
		}
		if run.Killed != nil {
			side.Killed++
		}
		if run.Exact() {
			side.Exact++
		}
		out[run.Collector] = side
		if len(run.Phases) == 0 || run.Phases[0].SpansPerSec <= 0 || run.Phases[0].CPUPercent <= 0 {
			continue
		}
		ph := run.Phases[0]
		a.rate = append(a.rate, ph.SpansPerSec)
		a.cpu = append(a.cpu, ph.CPUPercent)
		a.cost = append(a.cost, ph.CPUPerSpan()*1e6)
		a.loadRSS = append(a.loadRSS, ph.RSSMaxMiB)
		a.rss = append(a.rss, run.RSSMaxMiB)
	}
	for name, a := range accs {
		side := out[name]
		side.Runs = len(a.rate)
		side.SpansPerSec, side.CPUPercent = harness.SpreadOf(a.rate), harness.SpreadOf(a.cpu)
		side.CPUMicrosPerSpan, side.LoadRSSMaxMiB, side.RSSMaxMiB = harness.SpreadOf(a.cost), harness.SpreadOf(a.loadRSS), harness.SpreadOf(a.rss)
		out[name] = side
	}
	return out
}

// graphRatio is a's median over b's, 0 when either side has no measured run.
func graphRatio(a, b Side, figure func(Side) harness.Spread) float64 {
	if a.Runs == 0 || b.Runs == 0 || figure(b).Median == 0 {
		return 0
	}
	return figure(a).Median / figure(b).Median
}

func rateOf(s Side) harness.Spread { return s.SpansPerSec }
func costOf(s Side) harness.Spread { return s.CPUMicrosPerSpan }
func rssOf(s Side) harness.Spread  { return s.LoadRSSMaxMiB }

// Failures lists what makes the run fail: a run that could not be measured, and a run of ours
// (red or ours) killed over the RSS cap or that did not count every call and edge. The stock side losing data is a result,
// reported in GRAPH.md, not a failure.
func (r *Report) Failures() []string {
	var out []string
	if r.Result.Error != "" {
		out = append(out, r.Result.Error)
	}
	for _, run := range r.Result.Runs {
		label := fmt.Sprintf("%s (round %d)", run.Collector, run.Round)
		if run.Error != "" {
			out = append(out, label+": "+run.Error)
		}
		switch {
		case run.Collector == "stock":
		case run.Killed != nil:
			out = append(out, fmt.Sprintf("%s: killed at %.2f GiB RSS", label, run.Killed.RSSMiB/1024))
		case !run.Exact():
			out = append(out, label+": "+countVerdict(run))
		}
	}
	return out
}

// countVerdict says in words whether run counted what it was sent.
func countVerdict(r Run) string {
	if !r.Counted {
		return "not counted"
	}
	var parts []string
	if d := r.Spans - r.CallsCounted; d != 0 {
		parts = append(parts, lossWords(d, "RED call"))
	}
	if r.HasGraph {
		if d := r.Edges - r.EdgesCounted; d != 0 {
			parts = append(parts, lossWords(d, "edge request"))
		}
	}
	if len(parts) == 0 {
		return "exact"
	}
	return strings.Join(parts, ", ")
}

func lossWords(missing int64, what string) string {
	if missing > 0 {
		return fmt.Sprintf("lost %d %ss", missing, what)
	}
	return fmt.Sprintf("counted %d %ss more than sent", -missing, what)
}

// WriteMarkdown writes GRAPH.md: the summary, the ratios, and every run with its counts.
func (r *Report) WriteMarkdown(w io.Writer) error {
	res := r.Result
	r.Sides = summarizeGraph(res)
	b := bufio.NewWriter(w)
	m := r.Machine
	fmt.Fprintf(b, "# testbed: service graph\n\n")
	fmt.Fprintf(b, "Run started %s on %d CPUs (%s), %.1f GiB, %s", r.Start.Format(time.RFC3339), m.CPUs, m.Model(), m.MemGiB, m.OS)
	if r.Commit != "" {
		fmt.Fprintf(b, ", commit %s", r.Commit)
	}
	fmt.Fprintf(b, ". Scenario: %s. Each collector runs alone, a fresh process with GOMAXPROCS=1 pinned to one CPU, the load generator "+
		"on the others, %d OTLP requests in flight, as fast as acknowledged. A collector is killed when its RSS passes "+
		"%.0f MiB. Flush interval %s.\n\n", res.Title, r.Concurrency, r.RSSCapMiB, r.FlushInterval)
	g := res.Graph
	fmt.Fprintf(b, "Input: %s. One pass of the pool is %d spans in %d requests of up to %d: each call a CLIENT span of the caller "+
		"and its SERVER span in the callee, each in its own service's resource; one call in %d has its server span in a later "+
		"request; one call in %d has a database CLIENT span (db.system, db.name) under its server span; half of the client "+
		"spans fail, and half of those with a failed server span. %d client spans per pass, each one service graph request.\n\n",
		g, res.PassSpans, res.PassRequests, res.Probe.SpansPerRequest, g.SplitEvery, g.DBEvery, res.PassEdges)
	b.WriteString("Sides: **red** our RED path alone (tracemetrics → cachedprom), **ours** the same with tracegraph, **stock** the " +
		"stock twin with spanmetrics and servicegraph (store ttl 10 s, max_items 100,000 like tracegraph's defaults, so that " +
		"neither drops a waiting half).\n\n")
	b.WriteString("| side | spans/s | CPU % | CPU µs/span | RSS max MiB, load | RSS max MiB, whole run | counts exact |\n|---|---|---|---|---|---|---|\n")
	for _, name := range res.Probe.Sides {
		s := r.Sides[name]
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %d of %d |\n", name, graphFigure(s.SpansPerSec, "%.0f"),
			graphFigure(s.CPUPercent, "%.0f"), graphFigure(s.CPUMicrosPerSpan, "%.3f"), graphFigure(s.LoadRSSMaxMiB, "%.0f"),
			graphFigure(s.RSSMaxMiB, "%.0f"), s.Exact, countRuns(res, name))
	}
	red, ours, stock := r.Sides["red"], r.Sides["ours"], r.Sides["stock"]
	fmt.Fprintf(b, "\nMedians (range) over the rounds. **ours ÷ stock** spans/s %s, **stock ÷ ours** CPU per span %s, RSS max %s. "+
		"**What the graph costs** (ours ÷ red): spans/s %s, CPU per span %s, RSS max %s.\n\n",
		harness.RatioCell(graphRatio(ours, stock, rateOf), ""), harness.RatioCell(graphRatio(stock, ours, costOf), ""),
		harness.RatioCell(graphRatio(stock, ours, rssOf), ""), harness.RatioCell(graphRatio(ours, red, rateOf), ""),
		harness.RatioCell(graphRatio(ours, red, costOf), ""), harness.RatioCell(graphRatio(ours, red, rssOf), ""))
	b.WriteString("RSS max, load is the largest reading during the measured phase (the ratios use it); the whole run adds " +
		"start-up, warm-up and the scrapes of the full page after the load. ")
	b.WriteString("CPU per span does not depend on whether the generator kept a collector busy (a rate does: a CPU % well under " +
		"100 means the collector waited for load).\n\n")
	b.WriteString("## Counts after the load\n\n")
	fmt.Fprintf(b, "Every span a collector acknowledged (warm-up included) must show in the sum of `%s`, every client span in "+
		"the sum of `%s` (a paired call, a database, or for a call whose server span the load did not send before it "+
		"stopped, a virtual node once the ttl passed). Scraped from one flush after the load until both add up, for %s at "+
		"most.\n\n", harness.CallsMetric, RequestsMetric, countWait(harness.Options{DrainTimeout: time.Hour, FlushInterval: r.FlushInterval}))
	b.WriteString("| side | round | spans sent | RED calls counted | edge requests sent | edge requests counted | scraped after (s) | verdict |\n|---|---|---|---|---|---|---|---|\n")
	for _, run := range res.Runs {
		edgesSent, edgesCounted := "-", "-"
		if run.HasGraph {
			edgesSent, edgesCounted = fmt.Sprint(run.Edges), fmt.Sprint(run.EdgesCounted)
		}
		verdict := countVerdict(run)
		if run.Killed != nil {
			verdict = fmt.Sprintf("killed at %.2f GiB RSS after %.0f s", run.Killed.RSSMiB/1024, run.Killed.At)
		}
		fmt.Fprintf(b, "| %s | %d | %d | %d | %s | %s | %.0f | %s |\n", run.Collector, run.Round, run.Spans, run.CallsCounted,
			edgesSent, edgesCounted, run.CountedAfterSeconds, verdict)
	}
	b.WriteString("\n## Every run\n\n| side | round | spans/s | CPU % | CPU µs/span | RSS max MiB, load / run | load average | config | note |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, run := range res.Runs {
		var ph solo.Phase
		if len(run.Phases) > 0 {
			ph = run.Phases[0]
		}
		note := harness.OrDash(run.Error)
		fmt.Fprintf(b, "| %s | %d | %.0f | %.0f | %.3f | %.0f / %.0f | %.2f | `%s` | %s |\n", run.Collector, run.Round, ph.SpansPerSec,
			ph.CPUPercent, ph.CPUPerSpan()*1e6, ph.RSSMaxMiB, run.RSSMaxMiB, run.LoadAverage, run.Config, note)
	}
	if len(res.Runs) > 0 && res.Runs[0].Placement != "" {
		fmt.Fprintf(b, "\nPlacement: %s.\n", res.Runs[0].Placement)
	}
	if res.Error != "" {
		fmt.Fprintf(b, "\n**Not fully measured:** %s\n", res.Error)
	}
	return b.Flush()
}

// graphFigure prints a median with its range, or the value alone when every run gave the same
// (one round).
func graphFigure(s harness.Spread, format string) string {
	if s != (harness.Spread{}) && s.Min == s.Max {
		return fmt.Sprintf(format, s.Median)
	}
	return s.Text(format)
}

// countRuns is the number of runs of side.
func countRuns(res *Result, side string) int {
	n := 0
	for _, run := range res.Runs {
		if run.Collector == side {
			n++
		}
	}
	return n
}
