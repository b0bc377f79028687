package scaling

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

// Row is one width and shape of the scaling plan over its rounds.
type Row struct {
	Procs  int `json:"gomaxprocs"`
	Series int `json:"series"`
	// Sides are floor, ours and stock (those with runs).
	Sides map[string]Side `json:"sides"`
	// OursFloor and OursStock are ours' median spans/s over the floor's and stock's; 0 when a
	// side has no measured run.
	OursFloor float64 `json:"ours_floor"`
	OursStock float64 `json:"ours_stock"`
	// FloorCost and StockCost are the floor's and stock's median CPU µs per span over ours': the
	// same comparison in CPU per span, which does not depend on whether the load generator kept
	// a collector saturated (a rate does); 0 when a side has no measured run.
	FloorCost float64 `json:"floor_cost"`
	StockCost float64 `json:"stock_cost"`
	// Placement is where the runs of this row ran (the first run's; every run of a width asks
	// for the same split).
	Placement string `json:"placement,omitempty"`
}

// Side is one collector at one width and shape.
type Side struct {
	// Runs counts the runs that measured a phase with spans and CPU; Killed those the RSS cap
	// ended.
	Runs             int            `json:"runs"`
	Killed           int            `json:"killed"`
	SpansPerSec      harness.Spread `json:"spans_per_sec"`
	CPUPercent       harness.Spread `json:"cpu_percent"`
	CPUMicrosPerSpan harness.Spread `json:"cpu_us_per_span"`
	RSSMaxMiB        harness.Spread `json:"rss_max_mib"`
}

// Summarize turns the scaling probes' runs into rows, width by width in the order they
// ran and shape by shape within one. A run whose phase has no spans or no CPU counts only as
// killed (when it was).
func Summarize(results []*solo.ProbeResult) []Row {
	var rows []Row
	for _, res := range results {
		procs, _ := strconv.Atoi(res.Probe.GOMAXPROCS)
		type acc struct{ rate, cpu, cost, rss []float64 }
		var order []int
		bySeries := map[int]map[string]*acc{}
		killed := map[int]map[string]int{}
		placement := map[int]string{}
		for _, run := range res.Runs {
			if _, ok := bySeries[run.Series]; !ok {
				order = append(order, run.Series)
				bySeries[run.Series], killed[run.Series] = map[string]*acc{}, map[string]int{}
				placement[run.Series] = run.Placement
			}
			if run.Killed != nil {
				killed[run.Series][run.Collector]++
			}
			if len(run.Phases) == 0 || run.Phases[0].SpansPerSec <= 0 || run.Phases[0].CPUPercent <= 0 {
				continue
			}
			ph := run.Phases[0]
			a := bySeries[run.Series][run.Collector]
			if a == nil {
				a = &acc{}
				bySeries[run.Series][run.Collector] = a
			}
			a.rate = append(a.rate, ph.SpansPerSec)
			a.cpu = append(a.cpu, ph.CPUPercent)
			a.cost = append(a.cost, ph.CPUPerSpan()*1e6)
			a.rss = append(a.rss, run.RSSMaxMiB)
		}
		for _, series := range order {
			row := Row{Procs: procs, Series: series, Sides: map[string]Side{}, Placement: placement[series]}
			for _, side := range res.Probe.Sides {
				a := bySeries[series][side]
				if a == nil {
					a = &acc{}
				}
				row.Sides[side] = Side{Runs: len(a.rate), Killed: killed[series][side], SpansPerSec: harness.SpreadOf(a.rate),
					CPUPercent: harness.SpreadOf(a.cpu), CPUMicrosPerSpan: harness.SpreadOf(a.cost), RSSMaxMiB: harness.SpreadOf(a.rss)}
			}
			row.OursFloor = rateRatio(row.Sides["ours"], row.Sides["floor"])
			row.OursStock = rateRatio(row.Sides["ours"], row.Sides["stock"])
			row.FloorCost = costRatio(row.Sides["floor"], row.Sides["ours"])
			row.StockCost = costRatio(row.Sides["stock"], row.Sides["ours"])
			rows = append(rows, row)
		}
	}
	return rows
}

// rateRatio is a's median spans/s over b's, 0 when either has no run.
func rateRatio(a, b Side) float64 {
	if a.Runs == 0 || b.Runs == 0 || b.SpansPerSec.Median == 0 {
		return 0
	}
	return a.SpansPerSec.Median / b.SpansPerSec.Median
}

// costRatio is a's median CPU µs per span over b's, 0 when either has no run.
func costRatio(a, b Side) float64 {
	if a.Runs == 0 || b.Runs == 0 || b.CPUMicrosPerSpan.Median == 0 {
		return 0
	}
	return a.CPUMicrosPerSpan.Median / b.CPUMicrosPerSpan.Median
}

// Report is a run of the scaling plan.
type Report struct {
	Start         time.Time           `json:"start"`
	Machine       harness.Machine     `json:"machine"`
	RSSCapMiB     float64             `json:"rss_cap_mib"`
	FlushInterval time.Duration       `json:"flush_interval_ns"`
	Results       []*solo.ProbeResult `json:"results"`
	// Rows is Summarize of Results, filled by WriteMarkdown.
	Rows []Row `json:"rows"`
}

// scalingSides is the column order of the report.
var scalingSides = []string{"floor", "ours", "stock"}

// WriteMarkdown writes SCALING.md: the summary table per width and shape, then every run.
func (r *Report) WriteMarkdown(w io.Writer) error {
	r.Rows = Summarize(r.Results)
	b := bufio.NewWriter(w)
	m := r.Machine
	fmt.Fprintf(b, "# testbed: scaling with GOMAXPROCS\n\n")
	fmt.Fprintf(b, "Run started %s on %d CPUs (%s), %.1f GiB, %s. The decode floor (OTLP receiver → a debug exporter "+
		"sampling one batch in a million), ours and the stock twin run one at a time, each a fresh collector, at max OTLP "+
		"rate on the same pre-encoded requests, with GOMAXPROCS=N and pinned alone to N CPUs, the load generator on the "+
		"others (where the host has fewer than N+1 CPUs the run is not pinned and shares them; see the placement). "+
		"Each run has a warm-up (one flush and 5 s) before its measured phase. A collector is killed when its RSS passes "+
		"%.0f MiB. Flush interval %s.\n\n", r.Start.Format(time.RFC3339), m.CPUs, m.Model(), m.MemGiB, m.OS,
		r.RSSCapMiB, r.FlushInterval)
	b.WriteString("Medians over the rounds (one run per side and round). spans/s is what each collector acknowledged in its " +
		"phase; ours ÷ floor and ours ÷ stock are ratios of those medians; CPU µs/span is the collector's CPU time over the " +
		"spans, and floor ÷ ours and stock ÷ ours the ratios of its medians (they do not depend on whether the generator " +
		"kept a collector busy, a rate does: a CPU % well under N × 100 means the collector waited for load); RSS is the " +
		"largest reading of the run.\n\n")
	b.WriteString("| GOMAXPROCS | series | spans/s floor / ours / stock | ours ÷ floor | ours ÷ stock | CPU µs/span floor / ours / stock | CPU/span floor ÷ ours | CPU/span stock ÷ ours | CPU % floor / ours / stock | RSS max MiB floor / ours / stock |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", row.Procs, harness.HumanCount(float64(row.Series)),
			sideCells(row, "%.0f", func(s Side) harness.Spread { return s.SpansPerSec }),
			harness.RatioCell(row.OursFloor, ""), harness.RatioCell(row.OursStock, ""),
			sideCells(row, "%.3f", func(s Side) harness.Spread { return s.CPUMicrosPerSpan }),
			harness.RatioCell(row.FloorCost, ""), harness.RatioCell(row.StockCost, ""),
			sideCells(row, "%.0f", func(s Side) harness.Spread { return s.CPUPercent }),
			sideCells(row, "%.0f", func(s Side) harness.Spread { return s.RSSMaxMiB }))
	}
	b.WriteString("\n")
	for _, row := range r.Rows {
		if row.Placement != "" {
			fmt.Fprintf(b, "- GOMAXPROCS=%d, %s: %s\n", row.Procs, harness.HumanCount(float64(row.Series)), row.Placement)
		}
	}
	b.WriteString("\n## Every run\n\nCPU steal % is the share of the collector's CPUs' time (the host's, where it was not pinned) " +
		"that the hypervisor gave to other guests during the phase, from /proc/stat: on a shared host, rounds that differ in it " +
		"had different CPU, which the collector's own CPU % cannot tell from waiting for load.\n\n| GOMAXPROCS | series | round | collector | spans/s | CPU % | CPU µs/span | RSS max (MiB) | load average | CPU steal % | note |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, res := range r.Results {
		for _, run := range res.Runs {
			var ph solo.Phase
			if len(run.Phases) > 0 {
				ph = run.Phases[0]
			}
			var notes []string
			if run.Killed != nil {
				notes = append(notes, fmt.Sprintf("killed at %.2f GiB RSS after %.0f s", run.Killed.RSSMiB/1024, run.Killed.At))
			}
			if run.Error != "" {
				notes = append(notes, "error: "+run.Error)
			}
			fmt.Fprintf(b, "| %s | %s | %d | %s | %.0f | %.0f | %.3f | %.0f | %.2f | %s | %s |\n", res.Probe.GOMAXPROCS,
				harness.HumanCount(float64(run.Series)), run.Round, run.Collector, ph.SpansPerSec, ph.CPUPercent, ph.CPUPerSpan()*1e6,
				run.RSSMaxMiB, run.LoadAverage, solo.StealText(ph.StealPercent), strings.Join(notes, "; "))
		}
		if res.Error != "" {
			fmt.Fprintf(b, "\n**GOMAXPROCS=%s not fully measured:** %s\n", res.Probe.GOMAXPROCS, res.Error)
		}
	}
	var runs []solo.ProbeRun
	var names []string
	for _, res := range r.Results {
		for _, run := range res.Runs {
			runs = append(runs, run)
			names = append(names, fmt.Sprintf("GOMAXPROCS=%s, %s", res.Probe.GOMAXPROCS, run.Label()))
		}
	}
	solo.WriteCPUProfiles(b, runs, names)
	return b.Flush()
}

// sideCells writes one figure of the floor, ours and stock as "a / b / c", "-" for a side without
// a run, "killed" for one the RSS cap ended before it measured anything and "(killed)" after the
// figure of one it ended during the phase.
func sideCells(row Row, format string, figure func(Side) harness.Spread) string {
	cells := make([]string, len(scalingSides))
	for i, name := range scalingSides {
		s := row.Sides[name]
		switch {
		case s.Runs > 0 && s.Killed > 0:
			cells[i] = fmt.Sprintf(format+" (killed)", figure(s).Median)
		case s.Runs > 0:
			cells[i] = fmt.Sprintf(format, figure(s).Median)
		case s.Killed > 0:
			cells[i] = "killed"
		default:
			cells[i] = "-"
		}
	}
	return strings.Join(cells, " / ")
}
