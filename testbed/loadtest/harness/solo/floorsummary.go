package solo

import (
	"slices"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

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
