package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/probes"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestSelectPlan(t *testing.T) {
	f := flags{}
	plan, mode, err := selectPlan(&f)
	require.NoError(t, err)
	assert.Equal(t, "full", mode)
	assert.Len(t, plan, 7)
	assert.Equal(t, 2*time.Minute, f.duration)
	assert.Equal(t, int64(10_000_000), f.kafkaBacklog)

	f = flags{short: true}
	plan, mode, err = selectPlan(&f)
	require.NoError(t, err)
	assert.Equal(t, "short", mode)
	assert.Len(t, plan, 4)
	assert.Equal(t, 30*time.Second, f.duration)
	assert.Equal(t, int64(4_000_000), plan[len(plan)-1].Backlog)

	f = flags{run: "^otlp-max", duration: time.Second}
	plan, _, err = selectPlan(&f)
	require.NoError(t, err)
	require.Len(t, plan, 2)
	assert.Equal(t, time.Second, f.duration)

	f = flags{run: "nothing"}
	_, _, err = selectPlan(&f)
	require.Error(t, err)
	f = flags{run: "("}
	_, _, err = selectPlan(&f)
	require.Error(t, err)
}

func TestSelectProbes(t *testing.T) {
	f := flags{flushInterval: 15 * time.Second, phase: 30 * time.Second, staleBacklog: 5_000_000}
	plan, err := selectProbes(f)
	require.NoError(t, err)
	require.Len(t, plan, 5)
	assert.Equal(t, "memory-1m", plan[0].Name)
	assert.Equal(t, "floor", plan[2].Name)
	assert.Equal(t, probes.DefaultFloorRounds, plan[2].Rounds)

	f.run, f.floorRounds = "^floor$", 5
	plan, err = selectProbes(f)
	require.NoError(t, err)
	require.Len(t, plan, 1)
	assert.Equal(t, 5, plan[0].Rounds)
	f.floorRounds = -1
	_, err = selectProbes(f)
	require.ErrorContains(t, err, "-floor-rounds")
	f.floorRounds = 0

	f.run = "^scrape"
	plan, err = selectProbes(f)
	require.NoError(t, err)
	require.Len(t, plan, 2)
	assert.Equal(t, "scrape-100k", plan[0].Name)
	assert.Equal(t, "scrapers-100k", plan[1].Name)

	f.run = "nothing"
	_, err = selectProbes(f)
	require.Error(t, err)
	f.run = "("
	_, err = selectProbes(f)
	require.Error(t, err)
}

func TestSelectScaling(t *testing.T) {
	f := flags{flushInterval: 15 * time.Second, phase: 15 * time.Second, concurrency: 4, scalingRounds: 1}
	plan, err := selectScaling(f, 2)
	require.NoError(t, err)
	require.Len(t, plan, 1, "a 2-CPU host leaves one CPU to the load generator")
	assert.Equal(t, "1", plan[0].GOMAXPROCS)

	plan, err = selectScaling(f, 16)
	require.NoError(t, err)
	require.Len(t, plan, 4)
	for i, want := range []string{"1", "2", "4", "8"} {
		assert.Equal(t, want, plan[i].GOMAXPROCS)
		assert.Len(t, plan[i].Shapes, 2)
		assert.Equal(t, 15*time.Second, plan[i].Window)
	}

	f.procs, f.scaling1M, f.scalingRounds = "1,2", true, 3
	plan, err = selectScaling(f, 2)
	require.NoError(t, err)
	require.Len(t, plan, 2, "-procs overrides what the host's CPUs suggest")
	assert.Equal(t, "2", plan[1].GOMAXPROCS)
	assert.Equal(t, 8, plan[1].Concurrency)
	assert.Equal(t, 3, plan[1].Rounds)
	assert.Equal(t, harness.Shape1M, plan[1].Shapes[2])

	f.procs = "1,x"
	_, err = selectScaling(f, 2)
	require.ErrorContains(t, err, "-procs")
	f.procs, f.scalingRounds = "", 0
	_, err = selectScaling(f, 2)
	require.ErrorContains(t, err, "-scaling-rounds")
}

func TestSelectGraph(t *testing.T) {
	f := flags{flushInterval: 15 * time.Second, phase: 30 * time.Second, graphRounds: 1}
	plan, err := selectGraph(f)
	require.NoError(t, err)
	require.Len(t, plan, 1)
	assert.Equal(t, "graph-max-rate", plan[0].Name)
	assert.Equal(t, "1", plan[0].GOMAXPROCS)
	assert.True(t, plan[0].PinCPU)
	assert.Equal(t, []string{"red", "ours", "stock"}, plan[0].Sides)
	assert.Equal(t, 20*time.Second, plan[0].Warmup)

	f.run = "graph"
	_, err = selectGraph(f)
	require.NoError(t, err)
	f.run = "otlp-max"
	_, err = selectGraph(f)
	require.Error(t, err)
	f.run, f.graphRounds = "", 0
	_, err = selectGraph(f)
	require.ErrorContains(t, err, "-graph-rounds")
}

func TestCheckModeFlags(t *testing.T) {
	assert.NoError(t, checkModeFlags(flags{}))
	assert.NoError(t, checkModeFlags(flags{scaling: true, cpuProfile: time.Second, scalingSeries: "1k"}))
	assert.NoError(t, checkModeFlags(flags{memory: true, cpuProfile: time.Second}))
	assert.ErrorContains(t, checkModeFlags(flags{cpuProfile: time.Second}), "-cpu-profile")
	assert.ErrorContains(t, checkModeFlags(flags{graph: true, cpuProfile: time.Second}), "-cpu-profile")
	assert.ErrorContains(t, checkModeFlags(flags{memory: true, scalingSeries: "1k"}), "-scaling-series")
}
