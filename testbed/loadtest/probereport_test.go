package loadtest

import (
	"bufio"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteFloorRounds(t *testing.T) {
	res := &ProbeResult{Probe: Probe{Name: "floor", Kind: ProbeFloor, Sides: []string{"floor", "ours"}, Rounds: 2}, Runs: []ProbeRun{
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

func TestProbeRunLabel(t *testing.T) {
	assert.Equal(t, "ours (1000 series)", ProbeRun{Collector: "ours", Series: 1000}.Label())
	assert.Equal(t, "floor (100000 series, round 3)", ProbeRun{Collector: "floor", Series: 100_000, Round: 3}.Label())
}

func TestWriteMemoryCountedCell(t *testing.T) {
	phase := []Phase{{Name: "load", SpansPerSec: 1_000_000, CPUPercent: 790}}
	res := &ProbeResult{Probe: Probe{Name: "memory-1m-gomaxprocs-8", Kind: ProbeMemory, Sides: []string{"ours", "stock"}}, Runs: []ProbeRun{
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
