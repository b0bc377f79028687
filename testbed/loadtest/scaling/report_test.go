package scaling

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

// scalingRun is a run with one phase of spans/s at cpu %.
func scalingRun(collector string, series, round int, rate, cpu, rss float64) solo.ProbeRun {
	return solo.ProbeRun{Collector: collector, Series: series, Round: round, RSSMaxMiB: rss, Placement: "alone on CPU(s) 1",
		Phases: []solo.Phase{{Name: "max rate", SpansPerSec: rate, CPUPercent: cpu}}}
}

func TestSummarize(t *testing.T) {
	res := &solo.ProbeResult{Probe: solo.Probe{Kind: Kind, GOMAXPROCS: "2", Sides: []string{"floor", "ours", "stock"}}, Runs: []solo.ProbeRun{
		scalingRun("floor", 1000, 1, 400_000, 200, 100),
		scalingRun("ours", 1000, 1, 300_000, 200, 150),
		scalingRun("stock", 1000, 1, 100_000, 200, 300),
		scalingRun("stock", 1000, 2, 150_000, 180, 310),
		scalingRun("ours", 1000, 2, 320_000, 190, 160),
		scalingRun("floor", 1000, 2, 420_000, 190, 110),
		scalingRun("floor", 100_000, 1, 380_000, 200, 120),
		scalingRun("ours", 100_000, 1, 200_000, 200, 400),
		{Collector: "stock", Series: 100_000, Round: 1, Killed: &harness.Sample{RSSMiB: 11_000, At: 30}},
	}}
	rows := Summarize([]*solo.ProbeResult{res})
	require.Len(t, rows, 2)

	r := rows[0]
	assert.Equal(t, 2, r.Procs)
	assert.Equal(t, 1000, r.Series)
	assert.Equal(t, "alone on CPU(s) 1", r.Placement)
	assert.Equal(t, 2, r.Sides["ours"].Runs)
	assert.InDelta(t, 310_000, r.Sides["ours"].SpansPerSec.Median, 1e-6)
	assert.InDelta(t, 410_000, r.Sides["floor"].SpansPerSec.Median, 1e-6)
	assert.InDelta(t, 125_000, r.Sides["stock"].SpansPerSec.Median, 1e-6)
	assert.InDelta(t, 310_000.0/410_000, r.OursFloor, 1e-9)
	assert.InDelta(t, 310_000.0/125_000, r.OursStock, 1e-9)
	// 200 % over 400k spans/s is 5 µs per span; 190 % over 420k is 4.52 µs.
	assert.InDelta(t, (5+190.0/100/420_000*1e6)/2, r.Sides["floor"].CPUMicrosPerSpan.Median, 1e-9)
	assert.InDelta(t, 155, r.Sides["ours"].RSSMaxMiB.Median, 1e-9)
	oursCost := (200.0/100/300_000 + 190.0/100/320_000) / 2 * 1e6
	assert.InDelta(t, r.Sides["floor"].CPUMicrosPerSpan.Median/oursCost, r.FloorCost, 1e-9)
	stockCost := (200.0/100/100_000 + 180.0/100/150_000) / 2 * 1e6
	assert.InDelta(t, stockCost/oursCost, r.StockCost, 1e-9)

	r = rows[1]
	assert.Equal(t, 100_000, r.Series)
	assert.Equal(t, 0, r.Sides["stock"].Runs)
	assert.Equal(t, 1, r.Sides["stock"].Killed)
	assert.InDelta(t, 0, r.OursStock, 0, "no ratio against a side that measured nothing")
	assert.InDelta(t, 0, r.StockCost, 0)
	assert.InDelta(t, 200_000.0/380_000, r.OursFloor, 1e-9)

	var b bytes.Buffer
	report := &Report{Start: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC), Machine: harness.Machine{CPUs: 2}, RSSCapMiB: 10240,
		FlushInterval: 15 * time.Second, Results: []*solo.ProbeResult{res}}
	require.NoError(t, report.WriteMarkdown(&b))
	md := b.String()
	assert.Contains(t, md, "| 2 | 1k | 410000 / 310000 / 125000 | 0.756 | 2.480 |")
	assert.Contains(t, md, "| 2 | 100k | 380000 / 200000 / killed | 0.526 | - |")
	assert.Contains(t, md, "killed at 10.74 GiB RSS after 30 s")
	assert.Len(t, report.Rows, 2)
}
