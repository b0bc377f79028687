package loadtest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

func TestMaxGap(t *testing.T) {
	tests := []struct {
		name     string
		times    []float64
		from, to float64
		want     float64
	}{
		{name: "no event: the whole window", from: 10, to: 40, want: 30},
		{name: "on time", times: []float64{5, 10, 15, 20}, from: 3, to: 22, want: 5},
		{name: "one late flush", times: []float64{5, 10, 22, 27}, from: 3, to: 28, want: 12},
		{name: "silent tail", times: []float64{5, 10}, from: 3, to: 30, want: 20},
		{name: "events outside the window ignored", times: []float64{1, 6, 11, 100}, from: 5, to: 12, want: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.InDelta(t, tt.want, maxGap(tt.times, tt.from, tt.to), 1e-9)
		})
	}
}

func TestFlushRSS(t *testing.T) {
	samples := []harness.Sample{{At: 1, RSSMiB: 100}, {At: 2, RSSMiB: 300}, {At: 3, RSSMiB: 200}, {At: 4, RSSMiB: 500}, {At: 5, RSSMiB: 400}}
	got := flushRSS([]solo.Delivery{{At: 1.5, Points: 7}, {At: 3.5, Points: 8}}, samples, 6)
	require.Len(t, got, 2)
	assert.Equal(t, solo.FlushRSS{At: 1.5, Points: 7, RSSMiB: 300, RSSMaxMiB: 300}, got[0])
	assert.Equal(t, solo.FlushRSS{At: 3.5, Points: 8, RSSMiB: 500, RSSMaxMiB: 500}, got[1])
}

func TestPprofTotal(t *testing.T) {
	tests := []struct {
		out  string
		want int64
	}{
		{"Showing nodes accounting for 1.20GB, 99.10% of 1.50GB total\n", int64(1.5 * (1 << 30))},
		{"Showing nodes accounting for 512kB, 100% of 512kB total\n", 512 << 10},
		{"Showing nodes accounting for 20MB, 90% of 22.50MB total\n", int64(22.5 * (1 << 20))},
		{"no total here", 0},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, pprofTotal([]byte(tt.out)), tt.out)
	}
}

func TestScrapersCountFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	url := srv.URL
	srv.Close() // nothing listens: every scrape fails
	sc := solo.StartScrapers(context.Background(), url, 1, true, 10*time.Millisecond, time.Second)
	time.Sleep(200 * time.Millisecond)
	st := sc.End()
	assert.Positive(t, st.Failed)
	assert.Zero(t, st.OK)
	assert.Equal(t, "no answer", latency(st, st.P50))
}

func TestMemoryPlan(t *testing.T) {
	plan := MemoryPlan(MemoryPlanConfig{FlushInterval: 15 * time.Second, Phase: 30 * time.Second, Backlog: 5_000_000})
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

	plan = MemoryPlan(MemoryPlanConfig{FlushInterval: 15 * time.Second, MemoryWindow: time.Minute, FloorRounds: 1})
	assert.Equal(t, time.Minute, plan[0].Window)
	assert.Equal(t, 1, plan[2].Rounds)
	assert.Equal(t, ProbeFloor, plan[2].Kind)
}

func TestMemoryPlanPerWidth(t *testing.T) {
	plan := MemoryPlan(MemoryPlanConfig{FlushInterval: 15 * time.Second, MemoryProcs: []int{1, 8}, Concurrency: 4})
	require.Len(t, plan, 6)
	for i, n := range []int{1, 8} {
		p := plan[i]
		assert.Equal(t, fmt.Sprintf("memory-1m-gomaxprocs-%d", n), p.Name)
		assert.Equal(t, ProbeMemory, p.Kind)
		assert.Equal(t, strconv.Itoa(n), p.GOMAXPROCS)
		assert.True(t, p.PinCPU)
		assert.Equal(t, 4*n, p.Concurrency)
		assert.Equal(t, n, p.Pinned())
		assert.Contains(t, Title(p), "GOMAXPROCS="+strconv.Itoa(n))
	}
	assert.Equal(t, "scrape-100k", plan[2].Name)
}

func TestKeepSides(t *testing.T) {
	plan := MemoryPlan(MemoryPlanConfig{FlushInterval: 15 * time.Second})
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
	pc := ProbeCollectors{
		Ours: harness.Collector{Name: "ours", Config: "default"}, OursMemory: harness.Collector{Name: "ours", Config: "memory"},
		Stock: harness.Collector{Name: "stock"}, Floor: harness.Collector{Name: "floor"},
	}
	for _, name := range []string{"ours", "stock", "floor"} {
		c, err := pc.sides(ProbeFloor).Get(name)
		require.NoError(t, err)
		assert.Equal(t, name, c.Name)
	}
	c, err := pc.sides(ProbeScrapeLoad).Get("ours")
	require.NoError(t, err)
	assert.Equal(t, "default", c.Config)
	c, err = pc.sides(ProbeMemory).Get("ours")
	require.NoError(t, err)
	assert.Equal(t, "memory", c.Config)
	_, err = pc.sides(ProbeMemory).Get("other")
	require.Error(t, err)
}

func TestParseMemStats(t *testing.T) {
	// The tail of /debug/pprof/heap?debug=1, as runtime/pprof writes it.
	text := `heap profile: 1: 64 [2: 128] @ heap/1048576
1: 64 [2: 128] @ 0x1
#	0x1	main.f+0x1	main.go:1

# runtime.MemStats
# Alloc = 1000
# HeapAlloc = 1000
# Sys = 9000
# HeapSys = 8000
# HeapIdle = 3000
# HeapInuse = 5000
# HeapReleased = 2000
# StackInuse = 400
# MSpanInuse = 50
# GCSys = 60
# OtherSys = 70
# NextGC = 2000
# NumGC = 12
# PauseNs = [1 2 3]
# GCCPUFraction = 0.125
`
	m, err := parseMemStats(strings.NewReader(text))
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{
		"HeapAlloc": 1000, "Sys": 9000, "HeapSys": 8000, "HeapIdle": 3000, "HeapInuse": 5000,
		"HeapReleased": 2000, "StackInuse": 400, "MSpanInuse": 50, "GCSys": 60, "OtherSys": 70,
		"NextGC": 2000, "NumGC": 12, "GCCPUFraction": 0.125,
	}, m)

	_, err = parseMemStats(strings.NewReader("heap profile: 0: 0 [0: 0] @ heap/1048576\n"))
	require.ErrorContains(t, err, "no runtime.MemStats")
	_, err = parseMemStats(strings.NewReader("# HeapAlloc = x\n"))
	require.ErrorContains(t, err, "HeapAlloc")
}

func TestCountWaitCoversThreeRenders(t *testing.T) {
	interval := 15 * time.Second
	assert.Equal(t, 60*time.Second, countWait(interval, &solo.ProbeRun{}), "no render seen: 30 s after the last flush")
	assert.Equal(t, 60*time.Second, countWait(interval, &solo.ProbeRun{RenderSeconds: 8}))
	// A render of 22 s (a million series on one slow core): one under way, the spare's wait and
	// the final render.
	assert.Equal(t, 96*time.Second, countWait(interval, &solo.ProbeRun{RenderSeconds: 12, FirstRenderSeconds: 22}))
}
