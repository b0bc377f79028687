package loadtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStalenessGate(t *testing.T) {
	p := Probe{Kind: ProbeStaleness}
	gate := func(st *Staleness) []string { return p.Gate(ProbeRun{Staleness: st}) }
	onTime := &Staleness{IntervalSeconds: 5, MaxLatenessSeconds: 0.1, BacklogSpans: 5_000_000, CallsCounted: 5_000_000}
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
	p := Probe{Kind: ProbeScrapeLoad, Scrapers: 8}
	run := func(unscraped, scraped float64, s ScrapeStats) ProbeRun {
		return ProbeRun{Phases: []Phase{{SpansPerSec: unscraped}, {SpansPerSec: scraped, Scrapes: s}}}
	}
	assert.Empty(t, p.Gate(run(700_000, 340_000, ScrapeStats{OK: 40, Unavailable: 1000})))
	// Before the in-flight limit, uncompressed scrapers took ingest to 0.06–0.08× of unscraped.
	assert.Len(t, p.Gate(run(700_000, 50_000, ScrapeStats{OK: 300})), 1)
	assert.Len(t, p.Gate(run(700_000, 340_000, ScrapeStats{OK: 40, Failed: 3})), 1)
	assert.Len(t, p.Gate(ProbeRun{}), 1)
	p.Gzip = true
	assert.Empty(t, p.Gate(run(700_000, 50_000, ScrapeStats{})))
}

func TestExactGate(t *testing.T) {
	p := Probe{Kind: ProbeMemory}
	assert.Empty(t, p.Gate(ProbeRun{Collector: "stock"}), "not checked")
	assert.Empty(t, p.Gate(ProbeRun{Sent: 5000, Counted: 5000}))
	assert.Equal(t, []string{"4999 calls counted of 5000 spans acknowledged"}, p.Gate(ProbeRun{Sent: 5000, Counted: 4999}))
	assert.Equal(t, []string{"calls counters not read after 5000 spans"}, p.Gate(ProbeRun{Sent: 5000, Counted: -1}))
}
