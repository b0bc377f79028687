package loadtest

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFlushesGroupChunks(t *testing.T) {
	tests := []struct {
		name       string
		deliveries []Delivery
		want       []Delivery
	}{
		{name: "none"},
		{
			name:       "one per interval",
			deliveries: []Delivery{{At: 15, Points: 10}, {At: 30, Points: 10}, {At: 45.2, Points: 10}},
			want:       []Delivery{{At: 15, Points: 10}, {At: 30, Points: 10}, {At: 45.2, Points: 10}},
		},
		{
			name:       "chunks of one flush",
			deliveries: []Delivery{{At: 15, Points: 4}, {At: 15.2, Points: 4}, {At: 16, Points: 2}, {At: 30.4, Points: 10}},
			want:       []Delivery{{At: 15, Points: 10}, {At: 30.4, Points: 10}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, flushes(tt.deliveries, 15*time.Second))
		})
	}
}

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
	samples := []Sample{{At: 1, RSSMiB: 100}, {At: 2, RSSMiB: 300}, {At: 3, RSSMiB: 200}, {At: 4, RSSMiB: 500}, {At: 5, RSSMiB: 400}}
	got := flushRSS([]Delivery{{At: 1.5, Points: 7}, {At: 3.5, Points: 8}}, samples, 6)
	require.Len(t, got, 2)
	assert.Equal(t, FlushRSS{At: 1.5, Points: 7, RSSMiB: 300, RSSMaxMiB: 300}, got[0])
	assert.Equal(t, FlushRSS{At: 3.5, Points: 8, RSSMiB: 500, RSSMaxMiB: 500}, got[1])
}

func TestRSSAndCPUBetween(t *testing.T) {
	samples := []Sample{{At: 1, RSSMiB: 100, CPUPercent: 50}, {At: 2, RSSMiB: 300, CPUPercent: 150}, {At: 3, RSSMiB: 200, CPUPercent: 100}}
	maxMiB, last := rssBetween(samples, 1.5, 4)
	assert.InDelta(t, 300.0, maxMiB, 1e-9)
	assert.InDelta(t, 200.0, last, 1e-9)
	assert.InDelta(t, 125.0, cpuBetween(samples, 1.5, 4), 1e-9)
	assert.Zero(t, cpuBetween(samples, 10, 20))
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

func TestScrapersCountStatuses(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) % 3 {
		case 0:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 1:
			assert.Equal(t, "identity", r.Header.Get("Accept-Encoding"))
			_, _ = w.Write([]byte("calls_total 1\n"))
		default:
			w.WriteHeader(http.StatusOK) // empty page: before the first flush
		}
	}))
	defer srv.Close()
	sc := startScrapers(context.Background(), srv.URL, 2, false, 0, time.Second)
	require.Eventually(t, func() bool { return n.Load() >= 30 }, 10*time.Second, time.Millisecond)
	st := sc.end()
	assert.Equal(t, 2, st.Clients)
	assert.Positive(t, st.OK)
	assert.Positive(t, st.Empty)
	assert.Positive(t, st.Unavailable)
	assert.Zero(t, st.OtherStatus)
	assert.Zero(t, st.Failed)
	assert.Equal(t, int64(len("calls_total 1\n")), st.WireBytes)
	assert.Positive(t, float64(st.P99))
	// Every answer is counted once, in one class; the requests cut by end are not counted.
	assert.LessOrEqual(t, int64(st.OK+st.Empty+st.Unavailable), n.Load())
}

// An empty page sent gzip-encoded is 20 bytes of framing: it is counted empty, as an empty
// identity page is, not as an answer whose size and latency describe the exposition.
func TestScrapersCountAnEmptyGzipPageAsEmpty(t *testing.T) {
	gzipOf := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write([]byte(s))
		require.NoError(t, zw.Close())
		return b.Bytes()
	}
	empty, page := gzipOf(""), gzipOf("calls_total 1\n")
	require.Len(t, empty, 23) // Go's writer; cachedprom's is 20: both under headBytes
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "gzip", r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Encoding", "gzip")
		if n.Add(1)%2 == 0 {
			_, _ = w.Write(empty)
			return
		}
		_, _ = w.Write(page)
	}))
	defer srv.Close()
	sc := startScrapers(context.Background(), srv.URL, 1, true, 0, time.Second)
	require.Eventually(t, func() bool { return n.Load() >= 20 }, 10*time.Second, time.Millisecond)
	st := sc.end()
	assert.Positive(t, st.OK)
	assert.Positive(t, st.Empty)
	assert.Equal(t, int64(len(page)), st.WireBytes, "the size is that of the page with content")
}

func TestScrapersCountFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	url := srv.URL
	srv.Close() // nothing listens: every scrape fails
	sc := startScrapers(context.Background(), url, 1, true, 10*time.Millisecond, time.Second)
	time.Sleep(200 * time.Millisecond)
	st := sc.end()
	assert.Positive(t, st.Failed)
	assert.Zero(t, st.OK)
	assert.Equal(t, "no answer", latency(st, st.P50))
}

// TestRSSWatchKillsOverCap runs a process that outlives the test unless the watch kills it: with
// a cap of one byte the first reading must kill it and record the reading.
func TestRSSWatchKillsOverCap(t *testing.T) {
	proc := startSleeper(t)
	w := newRSSWatch(proc, 10*time.Millisecond, 1)
	select {
	case <-w.Killed():
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not kill a process over the cap")
	}
	assert.True(t, w.close())
	k, ok := w.KilledAt()
	require.True(t, ok)
	assert.Positive(t, k.RSSMiB)
	exited, _ := proc.Exited()
	assert.True(t, exited)
}

func TestRSSWatchLeavesProcessUnderCap(t *testing.T) {
	proc := startSleeper(t)
	w := newRSSWatch(proc, 10*time.Millisecond, 1<<40)
	require.Eventually(t, func() bool { return len(w.Samples()) >= 3 }, 10*time.Second, 10*time.Millisecond)
	assert.False(t, w.close())
	exited, _ := proc.Exited()
	assert.False(t, exited)
	// sleep ends by SIGTERM, which Stop does not count as an error.
	require.NoError(t, proc.Stop())
}

func TestMemoryPlan(t *testing.T) {
	plan := MemoryPlan(MemoryPlanConfig{FlushInterval: 15 * time.Second, Phase: 30 * time.Second, Backlog: 5_000_000})
	names := map[string]Probe{}
	for _, p := range plan {
		names[p.Name] = p
		assert.NotEmpty(t, p.Sides, p.Name)
		assert.NotEmpty(t, p.Shapes, p.Name)
		assert.NotEmpty(t, p.Title(), p.Name)
	}
	require.Len(t, names, 5)
	mem := names["memory-1m"]
	assert.Equal(t, 1_000_000, mem.Shapes[0].Series())
	assert.Equal(t, 70*time.Second, mem.Window)
	assert.Equal(t, 4*time.Minute, mem.MaxWindow)
	assert.Equal(t, []string{"ours", "stock"}, mem.Sides)
	assert.Equal(t, "1", names["floor"].GOMAXPROCS)
	assert.Equal(t, []Shape{Shape1k, Shape100k}, names["floor"].Shapes)
	assert.Equal(t, DefaultFloorRounds, names["floor"].Rounds)
	assert.Equal(t, []string{"floor", "ours"}, names["floor"].Sides)
	assert.Contains(t, names["floor"].Title(), "in each of 3 round(s)")
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
		assert.Equal(t, n, p.pinned())
		assert.Contains(t, p.Title(), "GOMAXPROCS="+strconv.Itoa(n))
	}
	assert.Equal(t, "scrape-100k", plan[2].Name)
}

func TestKeepSides(t *testing.T) {
	plan := MemoryPlan(MemoryPlanConfig{FlushInterval: 15 * time.Second})
	kept, err := KeepSides(plan, "ours")
	require.NoError(t, err)
	require.Len(t, kept, 5)
	for _, p := range kept {
		assert.Equal(t, []string{"ours"}, p.Sides, p.Name)
	}
	assert.Equal(t, []string{"ours", "stock"}, plan[0].Sides, "the plan given is not changed")

	kept, err = KeepSides(plan, "stock, floor")
	require.NoError(t, err)
	var names []string
	for _, p := range kept {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"memory-1m", "scrape-100k", "floor"}, names, "probes without a side kept are dropped")

	same, err := KeepSides(plan, "")
	require.NoError(t, err)
	assert.Equal(t, plan, same)

	_, err = KeepSides(plan, "ours,mine")
	require.ErrorContains(t, err, `-sides: "mine" is not a collector`)
}

func TestProbeCollectorsByName(t *testing.T) {
	pc := ProbeCollectors{
		Ours: Collector{Name: "ours", Config: "default"}, OursMemory: Collector{Name: "ours", Config: "memory"},
		Stock: Collector{Name: "stock"}, Floor: Collector{Name: "floor"},
	}
	for _, name := range []string{"ours", "stock", "floor"} {
		c, err := pc.byName(name, ProbeFloor)
		require.NoError(t, err)
		assert.Equal(t, name, c.Name)
	}
	c, err := pc.byName("ours", ProbeScrapeLoad)
	require.NoError(t, err)
	assert.Equal(t, "default", c.Config)
	c, err = pc.byName("ours", ProbeMemory)
	require.NoError(t, err)
	assert.Equal(t, "memory", c.Config)
	_, err = pc.byName("other", ProbeMemory)
	require.Error(t, err)
}

// startSleeper starts a stand-in collector that sleeps for a minute, unless stopped or killed.
func startSleeper(t *testing.T) *Process {
	dir := t.TempDir()
	script := filepath.Join(dir, "collector")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755))
	proc, err := StartCollector(Collector{Name: "fake", Binary: script, Config: "unused"}, nil, filepath.Join(dir, "log"))
	require.NoError(t, err)
	return proc
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
	assert.Equal(t, 60*time.Second, countWait(interval, &ProbeRun{}), "no render seen: 30 s after the last flush")
	assert.Equal(t, 60*time.Second, countWait(interval, &ProbeRun{RenderSeconds: 8}))
	// A render of 22 s (a million series on one slow core): one under way, the spare's wait and
	// the final render.
	assert.Equal(t, 96*time.Second, countWait(interval, &ProbeRun{RenderSeconds: 12, FirstRenderSeconds: 22}))
}
