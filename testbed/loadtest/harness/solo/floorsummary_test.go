package solo

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// floorRunOf is a floor probe run whose phase costs cpuMicros µs of CPU per span at rate spans/s.
func floorRunOf(collector string, series, round int, rate, cpuMicros float64) ProbeRun {
	return ProbeRun{Collector: collector, Series: series, Round: round,
		Phases: []Phase{{Name: "max rate", SpansPerSec: rate, CPUPercent: cpuMicros * 1e-6 * rate * 100}}}
}

func TestSummarizeFloor(t *testing.T) {
	runs := []ProbeRun{
		floorRunOf("floor", 1000, 1, 1_000_000, 1.0),
		floorRunOf("ours", 1000, 1, 800_000, 1.25),
		floorRunOf("ours", 1000, 2, 700_000, 1.4),
		floorRunOf("floor", 1000, 2, 900_000, 1.1),
		floorRunOf("floor", 1000, 3, 1_100_000, 0.8),
		floorRunOf("ours", 1000, 3, 1_000_000, 1.0),
		floorRunOf("floor", 100_000, 1, 1_000_000, 1.0),
		// Killed before its phase: counts nowhere, and round 1 at 100k has no pair.
		{Collector: "ours", Series: 100_000, Round: 1},
		floorRunOf("ours", 100_000, 2, 500_000, 2.0),
		floorRunOf("floor", 100_000, 2, 1_000_000, 1.2),
		// A phase without spans (a collector that never became ready to take load) counts nowhere.
		floorRunOf("floor", 100_000, 3, 0, 0),
		floorRunOf("ours", 100_000, 3, 600_000, 1.5),
		// Another collector is not a side of the summary.
		floorRunOf("stock", 1000, 1, 100, 100),
	}
	got := SummarizeFloor(runs)
	require.Len(t, got, 2)

	s := got[0]
	assert.Equal(t, 1000, s.Series)
	assert.Equal(t, 3, s.Floor.Runs)
	assert.Equal(t, 3, s.Ours.Runs)
	assertSpread(t, harness.Spread{Median: 1.0, Min: 0.8, Max: 1.1}, s.Floor.CPUMicrosPerSpan)
	assertSpread(t, harness.Spread{Median: 1.25, Min: 1.0, Max: 1.4}, s.Ours.CPUMicrosPerSpan)
	assertSpread(t, harness.Spread{Median: 1_000_000, Min: 900_000, Max: 1_100_000}, s.Floor.SpansPerSec)
	assertSpread(t, harness.Spread{Median: 800_000, Min: 700_000, Max: 1_000_000}, s.Ours.SpansPerSec)
	assert.InDelta(t, 1.0/1.25, s.CostRatio, 1e-9)
	assert.InDelta(t, 0.8, s.RateRatio, 1e-9)
	require.Len(t, s.Rounds, 3)
	// Each round against itself: 1.0/1.25, 1.1/1.4, 0.8/1.0 in CPU per span.
	wantCost := []float64{0.8, 1.1 / 1.4, 0.8}
	wantRate := []float64{0.8, 700.0 / 900, 1000.0 / 1100}
	for i, r := range s.Rounds {
		assert.Equal(t, i+1, r.Round)
		assert.InDelta(t, wantCost[i], r.CostRatio, 1e-9, "round %d", r.Round)
		assert.InDelta(t, wantRate[i], r.RateRatio, 1e-9, "round %d", r.Round)
	}
	assert.InDelta(t, 0.8, s.RoundCostRatio, 1e-9)
	assert.InDelta(t, 0.8, s.RoundRateRatio, 1e-9)

	s = got[1]
	assert.Equal(t, 100_000, s.Series)
	assert.Equal(t, 2, s.Floor.Runs)
	assert.Equal(t, 2, s.Ours.Runs)
	assertSpread(t, harness.Spread{Median: 1.1, Min: 1.0, Max: 1.2}, s.Floor.CPUMicrosPerSpan)
	assertSpread(t, harness.Spread{Median: 1.75, Min: 1.5, Max: 2.0}, s.Ours.CPUMicrosPerSpan)
	assert.InDelta(t, 1.1/1.75, s.CostRatio, 1e-9)
	require.Len(t, s.Rounds, 1, "only round 2 has both sides")
	assert.Equal(t, 2, s.Rounds[0].Round)
	assert.InDelta(t, 0.6, s.Rounds[0].CostRatio, 1e-9)
	assert.InDelta(t, 0.5, s.Rounds[0].RateRatio, 1e-9)
	assert.InDelta(t, 0.6, s.RoundCostRatio, 1e-9)
}

func TestSummarizeFloorOneSideOnly(t *testing.T) {
	got := SummarizeFloor([]ProbeRun{floorRunOf("floor", 1000, 1, 1_000_000, 1.0)})
	require.Len(t, got, 1)
	assert.Equal(t, 1, got[0].Floor.Runs)
	assert.Zero(t, got[0].Ours.Runs)
	assert.Zero(t, got[0].CostRatio)
	assert.Zero(t, got[0].RateRatio)
	assert.Empty(t, got[0].Rounds)
	assert.Zero(t, got[0].RoundCostRatio)
	assert.Empty(t, SummarizeFloor(nil))
}

func assertSpread(t *testing.T, want, got harness.Spread) {
	t.Helper()
	assert.InDelta(t, want.Median, got.Median, 1e-9*max(1, want.Median), "median")
	assert.InDelta(t, want.Min, got.Min, 1e-9*max(1, want.Min), "min")
	assert.InDelta(t, want.Max, got.Max, 1e-9*max(1, want.Max), "max")
}
