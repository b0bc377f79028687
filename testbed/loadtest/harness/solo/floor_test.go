package solo

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

func TestRoundOrder(t *testing.T) {
	sides := []string{"floor", "ours"}
	tests := []struct {
		round int
		want  []string
	}{
		{round: 1, want: []string{"floor", "ours"}},
		{round: 2, want: []string{"ours", "floor"}},
		{round: 3, want: []string{"floor", "ours"}},
		{round: 4, want: []string{"ours", "floor"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.round), func(t *testing.T) {
			assert.Equal(t, tt.want, RoundOrder(sides, tt.round))
		})
	}
	assert.Equal(t, []string{"floor", "ours"}, sides, "RoundOrder must not reorder the probe's sides")
}

// floorCollectors names each collector so that a test can tell from a run which one ran.
var floorCollectors = Collectors{"floor": {Name: "floor", Config: "floor.yaml"}, "ours": {Name: "ours", Config: "default.yaml"}}

func TestEachRoundInterleaves(t *testing.T) {
	p := Probe{Name: "floor", Sides: []string{"floor", "ours"}, Rounds: 3}
	res := &ProbeResult{}
	var ran []string
	err := EachRound(context.Background(), p, floorCollectors, &harness.Pool{Shape: harness.Shape1k}, res, func(c harness.Collector, run *ProbeRun) error {
		ran = append(ran, fmt.Sprintf("%s/%d", c.Name, run.Round))
		run.Phases = []Phase{{Name: "max rate", SpansPerSec: float64(len(ran))}}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"floor/1", "ours/1", "ours/2", "floor/2", "floor/3", "ours/3"}, ran)
	require.Len(t, res.Runs, 6)
	for i, run := range res.Runs {
		assert.Equal(t, ran[i], fmt.Sprintf("%s/%d", run.Collector, run.Round))
		assert.Equal(t, 1000, run.Series)
		assert.Equal(t, map[string]string{"floor": "floor.yaml", "ours": "default.yaml"}[run.Collector], run.Config)
		assert.InDelta(t, float64(i+1), run.Phases[0].SpansPerSec, 0)
	}
}

func TestEachRoundOneRoundWithoutRounds(t *testing.T) {
	p := Probe{Name: "floor", Sides: []string{"floor", "ours"}}
	res := &ProbeResult{}
	require.NoError(t, EachRound(context.Background(), p, floorCollectors, &harness.Pool{Shape: harness.Shape1k}, res,
		func(harness.Collector, *ProbeRun) error { return nil }))
	require.Len(t, res.Runs, 2)
	assert.Equal(t, "floor", res.Runs[0].Collector)
	assert.Equal(t, 1, res.Runs[0].Round)
	assert.Equal(t, "ours", res.Runs[1].Collector)
}

func TestEachRoundKeepsErrorsAndStopsOnCancel(t *testing.T) {
	p := Probe{Name: "floor", Sides: []string{"floor", "ours"}, Rounds: 3}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := &ProbeResult{}
	err := EachRound(ctx, p, floorCollectors, &harness.Pool{Shape: harness.Shape1k}, res, func(c harness.Collector, run *ProbeRun) error {
		if run.Round == 2 && c.Name == "ours" {
			cancel()
			return errors.New("interrupted")
		}
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
	// The run that saw the cancel is kept with its error; nothing runs after it.
	require.Len(t, res.Runs, 3)
	assert.Equal(t, "ours", res.Runs[2].Collector)
	assert.Equal(t, 2, res.Runs[2].Round)
	assert.Equal(t, "interrupted", res.Runs[2].Error)
}

func TestEachRoundUnknownSide(t *testing.T) {
	p := Probe{Name: "floor", Sides: []string{"floor", "other"}, Rounds: 2}
	res := &ProbeResult{}
	err := EachRound(context.Background(), p, floorCollectors, &harness.Pool{Shape: harness.Shape1k}, res, func(harness.Collector, *ProbeRun) error { return nil })
	require.ErrorContains(t, err, `unknown collector "other"`)
	assert.Len(t, res.Runs, 1)
}
