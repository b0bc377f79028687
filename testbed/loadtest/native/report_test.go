package native

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

func TestNativeReport(t *testing.T) {
	run := func(side string, spans, idle, settled float64, sc solo.NativeScrapes) solo.ProbeRun {
		return solo.ProbeRun{Collector: side, Series: 100_000, Phases: []solo.Phase{{SpansPerSec: spans, CPUPercent: 100}},
			Native: &solo.NativeRun{RSSIdleMiB: idle, RSSSettledMiB: settled, Scrapes: []solo.NativeScrapes{sc}}}
	}
	res := &solo.ProbeResult{Probe: Plan(PlanConfig{FlushInterval: 15 * time.Second, Phase: 30 * time.Second, Scrapes: 5})[0],
		Runs: []solo.ProbeRun{
			run("ours", 400_000, 100, 300, solo.NativeScrapes{Format: solo.FormatProtobuf, OK: 5, P50: 10, Max: 20, WireBytes: 1_000_000,
				Body: &solo.ProtoBodyStats{NativeHistograms: 50_000}}),
			run("ours-classic", 500_000, 100, 250, solo.NativeScrapes{Format: solo.FormatText, OK: 5, P50: 30, Max: 40, WireBytes: 4_000_000}),
			run("stock", 100_000, 100, 900, solo.NativeScrapes{Format: solo.FormatProtobuf, OK: 5, P50: 5000, Max: 8000, WireBytes: 3_000_000}),
		}}
	var sb strings.Builder
	require.NoError(t, (&Report{Start: time.Unix(0, 0).UTC(), Commit: "abc1234", Results: []*solo.ProbeResult{res}}).WriteMarkdown(&sb))
	md := sb.String()
	assert.Contains(t, md, "binaries built from commit abc1234")
	// (300-100) MiB over 100k series.
	assert.Contains(t, md, "| ours | 400000 | 100 | 2.500 | 100 / 300 / 0 | 2097 |")
	assert.Contains(t, md, "| ours | protobuf |")
	assert.Contains(t, md, "| 50000 / 0 |")
	assert.Contains(t, md, "Protobuf scrape, stock ÷ ours: p50 500×, max 400×; gzip body 3.00×.")
	assert.Contains(t, md, "Ingest, ours ÷ stock: 4.00× in spans/s, 4.00× in CPU per span (stock ÷ ours).")
	assert.Contains(t, md, "Memory per RED series, stock ÷ ours: 4.00×.")
	assert.Contains(t, md, "Ours, memory per RED series, exponential ÷ classic: 1.33×")
	assert.Contains(t, md, "Ours, protobuf+gzip body (exponential) ÷ text+gzip body (classic): 0.25×")
	assert.Contains(t, Title(res.Probe), "protobuf as Prometheus 3 asks with native histograms for ours, stock, text for ours-classic")
}
