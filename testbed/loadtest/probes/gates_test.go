package probes

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

func TestStalenessGate(t *testing.T) {
	p := solo.Probe{Kind: KindStaleness}
	gate := func(st *solo.Staleness) []string { return Gate(p, solo.ProbeRun{Staleness: st}) }
	onTime := &solo.Staleness{IntervalSeconds: 5, MaxLatenessSeconds: 0.1, BacklogSpans: 5_000_000, CallsCounted: 5_000_000}
	assert.Empty(t, gate(onTime))
	// A starved flush loop, as the probe measured it before the fix: 7–8 s late at a 5 s interval.
	starved := *onTime
	starved.MaxLatenessSeconds = 7.2
	assert.Len(t, gate(&starved), 1)
	lost := *onTime
	lost.CallsCounted--
	assert.Len(t, gate(&lost), 1)
	assert.Len(t, gate(nil), 1)
}

func TestScrapersGate(t *testing.T) {
	p := solo.Probe{Kind: KindScrapeLoad, Scrapers: 8}
	run := func(unscraped, scraped float64, s solo.ScrapeStats) solo.ProbeRun {
		return solo.ProbeRun{Phases: []solo.Phase{{SpansPerSec: unscraped}, {SpansPerSec: scraped, Scrapes: s}}}
	}
	assert.Empty(t, Gate(p, run(700_000, 340_000, solo.ScrapeStats{OK: 40, Unavailable: 1000})))
	// Before the in-flight limit, uncompressed scrapers took ingest to 0.06–0.08× of unscraped.
	assert.Len(t, Gate(p, run(700_000, 50_000, solo.ScrapeStats{OK: 300})), 1)
	assert.Len(t, Gate(p, run(700_000, 340_000, solo.ScrapeStats{OK: 40, Failed: 3})), 1)
	assert.Len(t, Gate(p, solo.ProbeRun{}), 1)
	p.Gzip = true
	assert.Empty(t, Gate(p, run(700_000, 50_000, solo.ScrapeStats{})))
}

func TestExactGate(t *testing.T) {
	p := solo.Probe{Kind: KindMemory}
	assert.Empty(t, Gate(p, solo.ProbeRun{Collector: "stock"}), "not checked")
	assert.Empty(t, Gate(p, solo.ProbeRun{Sent: 5000, Counted: 5000}))
	assert.Equal(t, []string{"4999 calls counted of 5000 spans acknowledged"}, Gate(p, solo.ProbeRun{Sent: 5000, Counted: 4999}))
	assert.Equal(t, []string{"calls counters not read after 5000 spans"}, Gate(p, solo.ProbeRun{Sent: 5000, Counted: -1}))
}
