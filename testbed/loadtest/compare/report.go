package compare

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// Report is a whole testbed run, the input of RESULTS.md.
type Report struct {
	Start    time.Time       `json:"start"`
	Machine  harness.Machine `json:"machine"`
	Mode     string          `json:"mode"`
	Duration time.Duration   `json:"duration_ns"`
	// Tolerance is how far below stock ours may fall on throughput before the run fails.
	Tolerance float64 `json:"tolerance"`
	// Concurrency and SpansPerRequest describe the OTLP load.
	Concurrency     int           `json:"concurrency"`
	ScrapeInterval  time.Duration `json:"scrape_interval_ns"`
	FlushInterval   time.Duration `json:"flush_interval_ns"`
	SpansPerRequest int           `json:"spans_per_request"`
	Results         []*Result     `json:"results"`
	// Errors are scenarios that could not be measured.
	Errors []string `json:"errors,omitempty"`
}

// Failures lists why the run fails: a scenario not measured, a span lost by either collector,
// ours needing more CPU per span than stock beyond the tolerance, or ours sustaining fewer spans/s
// than stock beyond the tolerance while also needing more CPU per span. The last condition is
// double on purpose: both collectors share the machine, and when it is oversubscribed the
// scheduler may give one of them less CPU; a throughput shortfall at an equal or better cost per
// span is that split, not a slower collector.
func (r *Report) Failures() []string {
	out := append([]string(nil), r.Errors...)
	for _, res := range r.Results {
		for _, s := range []Side{res.Ours, res.Stock} {
			if s.Lost != 0 {
				out = append(out, fmt.Sprintf("%s: %s lost %d of %d spans (counted %d)",
					res.Scenario.Name, s.Name, s.Lost, s.Sent, s.Counted))
			}
			if s.Error != "" {
				out = append(out, fmt.Sprintf("%s: %s: %s", res.Scenario.Name, s.Name, s.Error))
			}
		}
		cost := ratio(res.Ours.CPUSecondsPerMillion, res.Stock.CPUSecondsPerMillion)
		if cost > 1+r.Tolerance {
			out = append(out, fmt.Sprintf("%s: ours needed %.2f CPU s per 1M spans, stock %.2f (ratio %.2f, tolerance %.0f%%)",
				res.Scenario.Name, res.Ours.CPUSecondsPerMillion, res.Stock.CPUSecondsPerMillion, cost, r.Tolerance*100))
		}
		if res.Ours.SpansPerSec < res.Stock.SpansPerSec*(1-r.Tolerance) && cost > 1 {
			out = append(out, fmt.Sprintf("%s: ours sustained %.0f spans/s, below stock's %.0f (ratio %.2f, tolerance %.0f%%) at a higher CPU cost per span",
				res.Scenario.Name, res.Ours.SpansPerSec, res.Stock.SpansPerSec,
				ratio(res.Ours.SpansPerSec, res.Stock.SpansPerSec), r.Tolerance*100))
		}
	}
	return out
}

// WriteMarkdown writes RESULTS.md: the table of ours against stock, with ratios, the date, the
// machine and the verdict.
func (r *Report) WriteMarkdown(w io.Writer) error {
	b := &strings.Builder{}
	m := r.Machine
	fmt.Fprintf(b, "# Testbed results: otelcol-red against the stock twin\n\n")
	fmt.Fprintf(b, "Written by `go run ./cmd/testbed` (`make testbed`; mode: %s) on %s.\n\n",
		r.Mode, r.Start.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(b, "Machine: %d CPUs (%s), %.0f GiB RAM, %s. Each collector runs as a child process with "+
		"GOMAXPROCS=%s; both run at the same time on identical input (the same pre-encoded requests at "+
		"the same pace, or the same Kafka backlog), so noise from other processes hits both alike. "+
		"The machine was shared with other workloads during the run (1-minute load average at the "+
		"start of each scenario in the last column): absolute numbers are noisy, the ratios are the result.\n\n",
		m.CPUs, m.Model(), m.MemGiB, m.OS, harness.CollectorGOMAXPROCS)
	if len(r.Results) > 0 {
		first := r.Results[0]
		fmt.Fprintf(b, "Ours: `%s` with `%s`. Stock: `%s` with `%s`.\n\n",
			first.Ours.Binary, first.Ours.Config, first.Stock.Binary, first.Stock.Config)
	}
	fmt.Fprintf(b, "Each cell is **ours / stock (ours ÷ stock)**. Higher is better for spans/s, lower for every other column.\n\n")
	fmt.Fprintf(b, "| Scenario | Spans/s sustained | CPU %% (mean, 200 = 2 cores) | CPU s per 1M spans | RSS max (MiB) | Scrape p50 (ms) | Scrape p99 (ms) | Lost spans | Load avg |\n")
	fmt.Fprintf(b, "|---|---|---|---|---|---|---|---|---|\n")
	for _, res := range r.Results {
		o, s := res.Ours, res.Stock
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %d / %d | %.1f |\n",
			res.Scenario.Title(),
			pair(o.SpansPerSec, s.SpansPerSec, 0),
			pair(o.CPUPercent, s.CPUPercent, 0),
			pair(o.CPUSecondsPerMillion, s.CPUSecondsPerMillion, 2),
			pair(o.RSSMaxMiB, s.RSSMaxMiB, 0),
			scrapePair(o, s, o.ScrapeP50, s.ScrapeP50),
			scrapePair(o, s, o.ScrapeP99, s.ScrapeP99),
			o.Lost, s.Lost, res.LoadAverage)
	}
	fmt.Fprintf(b, "\n")
	if f := r.Failures(); len(f) > 0 {
		fmt.Fprintf(b, "**Verdict: FAIL**\n\n")
		for _, line := range f {
			fmt.Fprintf(b, "- %s\n", line)
		}
	} else {
		fmt.Fprintf(b, "**Verdict: PASS**: no span lost by either collector; in every scenario ours needed at "+
			"most %.0f%% of stock's CPU per span, and never sustained fewer spans/s (beyond %.0f%%) at a "+
			"higher CPU cost per span.\n", (1+r.Tolerance)*100, r.Tolerance*100)
	}
	fmt.Fprintf(b, "\n## Charts\n\n![Sustained throughput per scenario](%s)\n\n", ThroughputChart)
	for _, res := range r.Results {
		cpu, rss, rate := ChartFiles(res)
		fmt.Fprintf(b, "- %s: [CPU](%s), [RSS](%s) and [spans/s](%s) over time\n", res.Scenario.Title(), cpu, rss, rate)
	}
	fmt.Fprintf(b, "\n## How each number is measured\n\n")
	fmt.Fprintf(b, "- **Spans/s sustained**: OTLP: spans the collector acknowledged (gRPC OK, no partial "+
		"rejection) over the load window of %s, with %d requests in flight per collector. A paced scenario sends %d-span requests at the "+
		"target rate; requests more than a quarter second behind schedule are skipped, so a "+
		"collector that cannot keep up shows a rate below the target. Max sends as fast as each collector "+
		"acknowledges. Kafka: the backlog (written before the collectors start, each collector in its own "+
		"consumer group) over the time from the first to the last span its receiver accepted, as its own "+
		"`%s` counter shows (plus `%s` for a collector reading Kafka with the otlpwire_encoding extension, "+
		"whose receiver counts 0).\n", r.Duration, r.Concurrency, r.SpansPerRequest, harness.AcceptedSpansMetric, harness.WireSpansMetric)
	fmt.Fprintf(b, "- **CPU %%**: user + system CPU time of the process over the window; **CPU s per 1M spans** divides "+
		"that time by the spans it took: the fair comparison when both keep up with a fixed rate.\n")
	fmt.Fprintf(b, "- **RSS max**: highest resident set size sampled every second during the window.\n")
	fmt.Fprintf(b, "- **Scrape p50/p99**: Prometheus-style scrapes (the Prometheus Accept header, gzip) of the "+
		"metrics endpoint every %s during the window, timed to the last byte of the body; nearest-rank "+
		"percentiles over few scrapes, so p99 is the slowest one. A failed scrape counts at its timeout (%s, "+
		"one interval, the most Prometheus allows); a scrape taken before the first metrics flush (an empty "+
		"page) is left out, and a side with no other scrape shows none. Both collectors flush their RED "+
		"metrics every %s.\n",
		r.ScrapeInterval, r.ScrapeInterval, r.FlushInterval)
	fmt.Fprintf(b, "- **Lost spans**: spans sent minus the sum of the `%s` counters scraped after the load, "+
		"polled until they match or the drain timeout passes. Any lost span fails the run.\n", harness.CallsMetric)
	_, err := io.WriteString(w, b.String())
	return err
}

// scrapePair is pair for scrape latencies. A side without a useful scrape in the window (every
// page still empty, or a Kafka backlog consumed in seconds) has no latency to show.
func scrapePair(ours, stock Side, o, s harness.Millis) string {
	switch {
	case ours.ScrapesUseful == 0 && stock.ScrapesUseful == 0:
		return "no scrape in window"
	case ours.ScrapesUseful == 0:
		return fmt.Sprintf("none / %s", number(float64(s), 1))
	case stock.ScrapesUseful == 0:
		return fmt.Sprintf("%s / none", number(float64(o), 1))
	}
	return pair(float64(o), float64(s), 1)
}

// pair formats "ours / stock (ratio×)".
func pair(ours, stock float64, decimals int) string {
	return fmt.Sprintf("%s / %s (%s)", number(ours, decimals), number(stock, decimals), ratioText(ours, stock))
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func ratioText(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64) + "×"
}

// number formats v with thousands separators.
func number(v float64, decimals int) string {
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	var out []byte
	for i := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, intPart[i])
	}
	res := string(out)
	if neg {
		res = "-" + res
	}
	if frac != "" {
		res += "." + frac
	}
	return res
}
