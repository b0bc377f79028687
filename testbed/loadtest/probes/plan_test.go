package probes

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

func TestMemoryPlan(t *testing.T) {
	plan := Plan(PlanConfig{FlushInterval: 15 * time.Second, Phase: 30 * time.Second, Backlog: 5_000_000})
	names := map[string]solo.Probe{}
	for _, p := range plan {
		names[p.Name] = p
		assert.NotEmpty(t, p.Sides, p.Name)
		assert.NotEmpty(t, p.Shapes, p.Name)
		assert.NotEmpty(t, Title(p), p.Name)
	}
	require.Len(t, names, 5)
	mem := names["memory-1m"]
	assert.Equal(t, 1_000_000, mem.Shapes[0].Series())
	assert.Equal(t, 70*time.Second, mem.Window)
	assert.Equal(t, 4*time.Minute, mem.MaxWindow)
	assert.Equal(t, []string{"ours", "stock"}, mem.Sides)
	assert.Equal(t, "1", names["floor"].GOMAXPROCS)
	assert.Equal(t, []harness.Shape{harness.Shape1k, harness.Shape100k}, names["floor"].Shapes)
	assert.Equal(t, DefaultFloorRounds, names["floor"].Rounds)
	assert.Equal(t, []string{"floor", "ours"}, names["floor"].Sides)
	assert.Contains(t, Title(names["floor"]), "in each of 3 round(s)")
	assert.Equal(t, 8, names["scrapers-100k"].Scrapers)
	assert.False(t, names["scrapers-100k"].Gzip)
	assert.True(t, names["scrape-100k"].Gzip)
	stale := names["kafka-stale-100k"]
	assert.Equal(t, 10, stale.SpansPerRequest)
	assert.Equal(t, 5*time.Second, stale.FlushInterval)
	assert.Equal(t, int64(5_000_000), stale.Backlog)

	plan = Plan(PlanConfig{FlushInterval: 15 * time.Second, MemoryWindow: time.Minute, FloorRounds: 1})
	assert.Equal(t, time.Minute, plan[0].Window)
	assert.Equal(t, 1, plan[2].Rounds)
	assert.Equal(t, KindFloor, plan[2].Kind)
}

func TestMemoryPlanPerWidth(t *testing.T) {
	plan := Plan(PlanConfig{FlushInterval: 15 * time.Second, MemoryProcs: []int{1, 8}, Concurrency: 4})
	require.Len(t, plan, 6)
	for i, n := range []int{1, 8} {
		p := plan[i]
		assert.Equal(t, fmt.Sprintf("memory-1m-gomaxprocs-%d", n), p.Name)
		assert.Equal(t, KindMemory, p.Kind)
		assert.Equal(t, strconv.Itoa(n), p.GOMAXPROCS)
		assert.True(t, p.PinCPU)
		assert.Equal(t, 4*n, p.Concurrency)
		assert.Equal(t, n, p.Pinned())
		assert.Contains(t, Title(p), "GOMAXPROCS="+strconv.Itoa(n))
	}
	assert.Equal(t, "scrape-100k", plan[2].Name)
}

func TestKeepSides(t *testing.T) {
	plan := Plan(PlanConfig{FlushInterval: 15 * time.Second})
	kept, err := solo.KeepSides(plan, "ours")
	require.NoError(t, err)
	require.Len(t, kept, 5)
	for _, p := range kept {
		assert.Equal(t, []string{"ours"}, p.Sides, p.Name)
	}
	assert.Equal(t, []string{"ours", "stock"}, plan[0].Sides, "the plan given is not changed")

	kept, err = solo.KeepSides(plan, "stock, floor")
	require.NoError(t, err)
	var names []string
	for _, p := range kept {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"memory-1m", "scrape-100k", "floor"}, names, "probes without a side kept are dropped")

	same, err := solo.KeepSides(plan, "")
	require.NoError(t, err)
	assert.Equal(t, plan, same)

	_, err = solo.KeepSides(plan, "ours,mine")
	require.ErrorContains(t, err, `-sides: "mine" is not a collector`)
}

func TestProbeCollectorsByName(t *testing.T) {
	pc := Collectors{
		Ours: harness.Collector{Name: "ours", Config: "default"}, OursMemory: harness.Collector{Name: "ours", Config: "memory"},
		Stock: harness.Collector{Name: "stock"}, Floor: harness.Collector{Name: "floor"},
	}
	for _, name := range []string{"ours", "stock", "floor"} {
		c, err := pc.sides(KindFloor).Get(name)
		require.NoError(t, err)
		assert.Equal(t, name, c.Name)
	}
	c, err := pc.sides(KindScrapeLoad).Get("ours")
	require.NoError(t, err)
	assert.Equal(t, "default", c.Config)
	c, err = pc.sides(KindMemory).Get("ours")
	require.NoError(t, err)
	assert.Equal(t, "memory", c.Config)
	_, err = pc.sides(KindMemory).Get("other")
	require.Error(t, err)
}
