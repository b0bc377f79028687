package probes

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

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
