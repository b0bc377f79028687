package compare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

func sampleReport() *Report {
	samples := []harness.Sample{{At: 1, CPUPercent: 50, RSSMiB: 60, SpansPerSec: 1000}, {At: 2, CPUPercent: 70, RSSMiB: 80, SpansPerSec: 1200}}
	res := &Result{
		Scenario: Scenario{Name: "otlp-max-1k", Transport: TransportOTLP, Shape: harness.Shape1k},
		Ours: Side{Name: "ours", Sent: 1000, Counted: 1000, SpansPerSec: 12_345.6, CPUSecondsPerMillion: 1,
			Samples: samples},
		Stock: Side{Name: "stock", Sent: 1000, Counted: 1000, SpansPerSec: 10_000, CPUSecondsPerMillion: 1,
			Samples: samples},
	}
	return &Report{Start: time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC), Machine: harness.Machine{CPUs: 2}, Mode: "short",
		Duration: 30 * time.Second, Tolerance: 0.1, Concurrency: 4, SpansPerRequest: 1000, Results: []*Result{res}}
}

func TestReportPasses(t *testing.T) {
	r := sampleReport()
	assert.Empty(t, r.Failures())
	var b strings.Builder
	require.NoError(t, r.WriteMarkdown(&b))
	md := b.String()
	assert.Contains(t, md, "| OTLP max, 1k series | 12,346 / 10,000 (1.23×) |")
	assert.Contains(t, md, "| no scrape in window |")
	assert.Contains(t, md, "**Verdict: PASS**")
	assert.Contains(t, md, "2026-11-21 08:00 UTC")
	assert.Contains(t, md, "2 CPUs")
}

func TestReportFailsOnLostSpanOrSlowerOurs(t *testing.T) {
	r := sampleReport()
	r.Results[0].Stock.Counted = 999
	r.Results[0].Stock.Lost = 1
	r.Results[0].Ours.SpansPerSec = 8_000
	r.Results[0].Ours.CPUSecondsPerMillion = 1.05
	f := r.Failures()
	require.Len(t, f, 2)
	assert.Contains(t, f[0], "stock lost 1 of 1000 spans")
	assert.Contains(t, f[1], "below stock")

	// Fewer spans/s at a lower cost per span is the scheduler's split, not a slower collector.
	r = sampleReport()
	r.Results[0].Ours.SpansPerSec = 8_000
	r.Results[0].Ours.CPUSecondsPerMillion = 0.9
	assert.Empty(t, r.Failures())

	// A higher cost per span beyond the tolerance fails whatever the throughput.
	r = sampleReport()
	r.Results[0].Ours.CPUSecondsPerMillion = 1.2
	f = r.Failures()
	require.Len(t, f, 1)
	assert.Contains(t, f[0], "CPU s per 1M spans")
	var b strings.Builder
	require.NoError(t, r.WriteMarkdown(&b))
	assert.Contains(t, b.String(), "**Verdict: FAIL**")
}

func TestReportWithinToleranceIsNotAFailure(t *testing.T) {
	r := sampleReport()
	r.Results[0].Ours.SpansPerSec = 9_500
	assert.Empty(t, r.Failures())
}

func TestScrapePair(t *testing.T) {
	useful := Side{ScrapesUseful: 2}
	assert.Equal(t, "none / 15,000.0", scrapePair(Side{}, useful, 0, 15000))
	assert.Equal(t, "2.5 / none", scrapePair(useful, Side{}, 2.5, 0))
	assert.Equal(t, "5.0 / 10.0 (0.50×)", scrapePair(useful, useful, 5, 10))
}

func TestNumberAndTitles(t *testing.T) {
	assert.Equal(t, "1,234,567", number(1234567, 0))
	assert.Equal(t, "-1,000.50", number(-1000.5, 2))
	assert.Equal(t, "12", number(12, 0))
	assert.Equal(t, "n/a", ratioText(1, 0))
	assert.Equal(t, "OTLP 100k spans/s, 100k series", Scenario{Transport: TransportOTLP, Shape: harness.Shape100k, Rate: 100_000}.Title())
	assert.Equal(t, "Kafka backlog of 3M spans, 1k series", Scenario{Transport: TransportKafka, Shape: harness.Shape1k, Backlog: 3_000_000}.Title())
}

func TestWriteCharts(t *testing.T) {
	dir := t.TempDir()
	r := sampleReport()
	require.NoError(t, WriteCharts(dir, r.Results))
	cpu, rss, rate := ChartFiles(r.Results[0])
	for _, name := range []string{cpu, rss, rate, ThroughputChart} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err, name)
		assert.True(t, strings.HasPrefix(string(b), "\x89PNG"), name)
	}
}

func TestPlans(t *testing.T) {
	full := FullPlan(1000)
	short := ShortPlan(1000)
	assert.Len(t, full, 7)
	require.Len(t, short, 4)
	assert.Equal(t, []string{"otlp-100k-1k", "otlp-max-1k", "otlp-max-100k", "kafka-1k"},
		[]string{short[0].Name, short[1].Name, short[2].Name, short[3].Name})
	names := map[string]bool{}
	for _, s := range full {
		assert.False(t, names[s.Name], "duplicate %s", s.Name)
		names[s.Name] = true
	}
}
