package solo

import (
	"slices"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// FloorSummary is the floor probe at one shape over its rounds: each side's medians and the
// floor ÷ ours ratios, of the medians and round by round.
type FloorSummary struct {
	Series int `json:"series"`
	// Floor and Ours summarize the runs of each side that measured a phase with spans and CPU.
	Floor FloorSide `json:"floor"`
	Ours  FloorSide `json:"ours"`
	// CostRatio is floor ÷ ours of the median CPU µs per span, RateRatio ours ÷ floor of the
	// median spans/s; 0 when a side has no run.
	CostRatio float64 `json:"cost_ratio"`
	RateRatio float64 `json:"rate_ratio"`
	// Rounds are the rounds in which both sides measured a phase, each side against the same
	// round's other side, in round order.
	Rounds []FloorRound `json:"rounds"`
	// RoundCostRatio and RoundRateRatio are the medians of the Rounds' ratios; 0 without rounds.
	// RoundCostRatio is the probe's headline: CPU per span does not depend on whether the load
	// generator kept a collector saturated, and a ratio within a round leaves out the host's
	// drift between rounds.
	RoundCostRatio float64 `json:"round_cost_ratio"`
	RoundRateRatio float64 `json:"round_rate_ratio"`
}

// FloorSide is one side of the floor probe at one shape.
type FloorSide struct {
	// Runs is how many runs measured a phase.
	Runs             int            `json:"runs"`
	CPUMicrosPerSpan harness.Spread `json:"cpu_us_per_span"`
	SpansPerSec      harness.Spread `json:"spans_per_sec"`
}

// FloorRound is floor ÷ ours in CPU per span and ours ÷ floor in rate within one round.
type FloorRound struct {
	Round     int     `json:"round"`
	CostRatio float64 `json:"cost_ratio"`
	RateRatio float64 `json:"rate_ratio"`
}

// floorPhase is the figure pair of a run the summary uses.
type floorPhase struct {
	cpuMicros, spansPerSec float64
}

// SummarizeFloor summarizes the floor probe's runs shape by shape, in the order the shapes ran.
// A run without a phase, or whose phase has no spans or no CPU (a collector killed, a run cut
// short), counts on neither side.
func SummarizeFloor(runs []ProbeRun) []FloorSummary {
	type key struct{ series, round int }
	var order []int
	sides := map[string]map[key]floorPhase{"floor": {}, "ours": {}}
	for _, run := range runs {
		byRound, ok := sides[run.Collector]
		if !ok || len(run.Phases) == 0 {
			continue
		}
		ph := run.Phases[0]
		if ph.SpansPerSec <= 0 || ph.CPUPercent <= 0 {
			continue
		}
		if !slices.Contains(order, run.Series) {
			order = append(order, run.Series)
		}
		byRound[key{run.Series, run.Round}] = floorPhase{cpuMicros: ph.CPUPerSpan() * 1e6, spansPerSec: ph.SpansPerSec}
	}
	out := make([]FloorSummary, 0, len(order))
	for _, series := range order {
		s := FloorSummary{Series: series}
		var floorRuns, oursRuns []floorPhase
		var rounds []int
		for k, f := range sides["floor"] {
			if k.series != series {
				continue
			}
			floorRuns = append(floorRuns, f)
			if _, ok := sides["ours"][k]; ok {
				rounds = append(rounds, k.round)
			}
		}
		for k, o := range sides["ours"] {
			if k.series == series {
				oursRuns = append(oursRuns, o)
			}
		}
		s.Floor, s.Ours = floorSide(floorRuns), floorSide(oursRuns)
		if s.Floor.Runs > 0 && s.Ours.Runs > 0 {
			s.CostRatio = s.Floor.CPUMicrosPerSpan.Median / s.Ours.CPUMicrosPerSpan.Median
			s.RateRatio = s.Ours.SpansPerSec.Median / s.Floor.SpansPerSec.Median
		}
		slices.Sort(rounds)
		var cost, rate []float64
		for _, r := range rounds {
			f, o := sides["floor"][key{series, r}], sides["ours"][key{series, r}]
			fr := FloorRound{Round: r, CostRatio: f.cpuMicros / o.cpuMicros, RateRatio: o.spansPerSec / f.spansPerSec}
			s.Rounds = append(s.Rounds, fr)
			cost, rate = append(cost, fr.CostRatio), append(rate, fr.RateRatio)
		}
		s.RoundCostRatio, s.RoundRateRatio = harness.Median(cost), harness.Median(rate)
		out = append(out, s)
	}
	return out
}

func floorSide(runs []floorPhase) FloorSide {
	cpu := make([]float64, len(runs))
	rate := make([]float64, len(runs))
	for i, r := range runs {
		cpu[i], rate[i] = r.cpuMicros, r.spansPerSec
	}
	return FloorSide{Runs: len(runs), CPUMicrosPerSpan: harness.SpreadOf(cpu), SpansPerSec: harness.SpreadOf(rate)}
}
