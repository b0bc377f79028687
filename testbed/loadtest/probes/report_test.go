package probes

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

func TestWriteFloorRounds(t *testing.T) {
	res := &solo.ProbeResult{Probe: solo.Probe{Name: "floor", Kind: KindFloor, Sides: []string{"floor", "ours"}, Rounds: 2}, Runs: []solo.ProbeRun{
		floorRunOf("floor", 1000, 1, 1_000_000, 1.0),
		floorRunOf("ours", 1000, 1, 800_000, 1.25),
		floorRunOf("ours", 1000, 2, 600_000, 1.6),
		floorRunOf("floor", 1000, 2, 900_000, 1.2),
		floorRunOf("floor", 100_000, 1, 1_000_000, 1.0),
		{Collector: "ours", Series: 100_000, Round: 1, Error: "did not become ready"},
	}}
	var sb strings.Builder
	b := bufio.NewWriter(&sb)
	writeProbe(b, res)
	require.NoError(t, b.Flush())
	md := sb.String()

	// One row per run in the order they ran, the ratios on ours' row against the same round's floor.
	rows := []string{
		"| 1000 | 1 | floor | 1000000 | 100 | 1.000 | 0 |  |  |",
		"| 1000 | 1 | ours | 800000 | 100 | 1.250 | 0 | 0.800 | 0.800 |",
		"| 1000 | 2 | ours | 600000 | 96 | 1.600 | 0 | 0.667 | 0.750 |",
		"| 1000 | 2 | floor | 900000 | 108 | 1.200 | 0 |  |  |",
		"| 100000 | 1 | floor | 1000000 | 100 | 1.000 | 0 |  |  |",
	}
	last := -1
	for _, row := range rows {
		i := strings.Index(md, row)
		require.GreaterOrEqual(t, i, 0, "missing row %q in\n%s", row, md)
		assert.Greater(t, i, last, "row %q out of order", row)
		last = i
	}
	// Medians over the rounds, the ratio of the medians, each round's ratio and their median in bold.
	assert.Contains(t, md, "| 1000 | 2 / 2 | 1.100 (1.000–1.200) | 1.425 (1.250–1.600) | 0.772 | 0.800, 0.750 | **0.775** |")
	assert.Contains(t, md, "| 1000 | 950000 (900000–1000000) | 700000 (600000–800000) | 0.737 | 0.800, 0.667 | 0.733 |")
	// A shape where ours measured nothing has the floor's figures and no ratio.
	assert.Contains(t, md, "| 100000 | 1 / 0 | 1.000 (1.000–1.000) | - | - | - | - |")
	assert.Contains(t, md, "**Headline: floor ÷ ours in CPU per span, the median of the per-round ratios**")
	assert.Contains(t, md, "- ours (100000 series, round 1): error: did not become ready")
	assert.Contains(t, md, "ours (1000 series, round 2) 0.00")
}

func TestWriteMemoryCountedCell(t *testing.T) {
	phase := []solo.Phase{{Name: "load", SpansPerSec: 1_000_000, CPUPercent: 790}}
	res := &solo.ProbeResult{Probe: solo.Probe{Name: "memory-1m-gomaxprocs-8", Kind: KindMemory, Sides: []string{"ours", "stock"}}, Runs: []solo.ProbeRun{
		{Collector: "ours", Series: 1_000_000, RSSMaxMiB: 1000, Phases: phase, Sent: 5000, Counted: 5000, Renders: 3, RenderSeconds: 1.5, FirstRenderSeconds: 2.25, FirstRenderAfter: 4},
		{Collector: "ours", Series: 1_000_000, RSSMaxMiB: 1000, Phases: phase, Sent: 5000, Counted: 4999},
		{Collector: "ours", Series: 1_000_000, RSSMaxMiB: 1000, Phases: phase, Sent: 5000, Counted: -1},
		{Collector: "stock", Series: 1_000_000, RSSMaxMiB: 1000, Phases: phase},
	}}
	var sb strings.Builder
	b := bufio.NewWriter(&sb)
	writeProbe(b, res)
	require.NoError(t, b.Flush())
	md := sb.String()
	assert.Contains(t, md, "| ours | 1000000 | 790 | 1000 | 1049 | 5000 / 5000 |")
	assert.Contains(t, md, "| ours | 1000000 | 790 | 1000 | 1049 | 4999 / 5000 |")
	assert.Contains(t, md, "| ours | 1000000 | 790 | 1000 | 1049 | unread / 5000 |")
	assert.Contains(t, md, "| stock | 1000000 | 790 | 1000 | 1049 | not checked |")
	assert.Contains(t, md, "ours: 3 renders of the snapshot from the second flush to the end of the load, 1.50 s each")
	assert.Equal(t, 1, strings.Count(md, "renders of the snapshot"), "runs without timed renders say nothing")
	assert.Contains(t, md, "ours: the first render after the first flush took 2.25 s and was seen done 4 s after that flush")
	assert.Equal(t, 1, strings.Count(md, "the first render after"), "runs without it say nothing")
}

// floorRunOf is a floor probe run whose phase costs cpuMicros µs of CPU per span at rate spans/s.
func floorRunOf(collector string, series, round int, rate, cpuMicros float64) solo.ProbeRun {
	return solo.ProbeRun{Collector: collector, Series: series, Round: round,
		Phases: []solo.Phase{{Name: "max rate", SpansPerSec: rate, CPUPercent: cpuMicros * 1e-6 * rate * 100}}}
}

func TestStealInReports(t *testing.T) {
	five := 5.04
	assert.Equal(t, "", phaseSteal([]solo.Phase{{Name: "load"}}))
	assert.Equal(t, "idle 5.0%", phaseSteal([]solo.Phase{{Name: "idle", StealPercent: &five}, {Name: "load"}}), "unmeasured phases are left out")
	assert.Equal(t, "idle 5.0%, load 5.0%", phaseSteal([]solo.Phase{{Name: "idle", StealPercent: &five}, {Name: "load", StealPercent: &five}}))

	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	writeProbe(w, &solo.ProbeResult{Probe: solo.Probe{Name: "memory-1m", Kind: KindMemory}, Runs: []solo.ProbeRun{{
		Collector: "ours", Series: 1000, Phases: []solo.Phase{{Name: "load", StealPercent: &five}},
	}}})
	require.NoError(t, w.Flush())
	assert.Contains(t, buf.String(), "- ours (1000 series): CPU time stolen by the hypervisor from its CPUs (the host's when not pinned), by phase: load 5.0%\n")
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
