// Package probes runs the memory and overload probes (make testbed-memory): a million series,
// ingest under scrapes, the decode floor, scrapers back to back and a flush starved by a Kafka
// backlog, one collector at a time, each killed above an RSS cap, and writes MEMORY.md.
package probes

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

const (
	// KindMemory loads a large cardinality as fast as acknowledged and records RSS after every
	// flush, gzip scrape latency and the ingest rate, for each collector in turn.
	KindMemory solo.ProbeKind = "memory"
	// KindScrapeLoad measures ingest and RSS without scrapes, then with Scrapers clients scraping
	// back to back, in one process.
	KindScrapeLoad solo.ProbeKind = "scrape-load"
	// KindFloor measures the decode floor (OTLP → pdata → a sampled debug exporter) and our RED
	// path on one core, in the same run, at each shape.
	KindFloor solo.ProbeKind = "floor"
	// KindStaleness drains a Kafka backlog of small messages and measures how late flushes are.
	KindStaleness solo.ProbeKind = "staleness"
)

// DefaultFloorRounds is the floor probe's rounds when PlanConfig.FloorRounds is 0: the
// least that has a median which one disturbed phase cannot move.
const DefaultFloorRounds = 3

// PlanConfig sizes the memory and overload plan.
type PlanConfig struct {
	// FlushInterval is the run's flush interval; windows are counted in flushes of it.
	FlushInterval time.Duration
	// Phase is the length of each phase of the scrape-load and floor probes.
	Phase time.Duration
	// MemoryWindow is the load window of the million-series probe (0: four flushes and 10 s).
	MemoryWindow time.Duration
	// Backlog is the Kafka backlog of the staleness probe.
	Backlog int64
	// FloorRounds is the floor probe's rounds (0: DefaultFloorRounds).
	FloorRounds int
	// MemoryProcs runs the million-series probe once per width instead of once at the default
	// GOMAXPROCS: each collector with GOMAXPROCS=N, pinned to N CPUs, with N times the requests in
	// flight, so bytes per series can be compared across core counts. Empty: one run, unpinned.
	MemoryProcs []int
	// Concurrency is the requests in flight per CPU of a MemoryProcs run.
	Concurrency int
}

// Plan is the set `make testbed-memory` runs: the memory work's and the overload items'
// scenarios, each bounded in time and (through Options.RSSCap) in memory.
func Plan(c PlanConfig) []solo.Probe {
	window := c.MemoryWindow
	if window == 0 {
		window = 4*c.FlushInterval + 10*time.Second
	}
	// The warm-up covers one flush and a margin, so the measured phases start with every series
	// created and flushed once.
	warmup := c.FlushInterval + 5*time.Second
	floorRounds := c.FloorRounds
	if floorRounds == 0 {
		floorRounds = DefaultFloorRounds
	}
	memory := []solo.Probe{{Name: "memory-1m", Kind: KindMemory, Shapes: []harness.Shape{harness.Shape1M}, Sides: []string{"ours", "stock"},
		Window: window, MaxWindow: max(window, 4*time.Minute), SpansPerRequest: 1000}}
	if len(c.MemoryProcs) > 0 {
		memory = memory[:0]
		for _, n := range c.MemoryProcs {
			memory = append(memory, solo.Probe{Name: fmt.Sprintf("memory-1m-gomaxprocs-%d", n), Kind: KindMemory,
				Shapes: []harness.Shape{harness.Shape1M}, Sides: []string{"ours", "stock"}, Window: window, MaxWindow: max(window, 4*time.Minute),
				SpansPerRequest: 1000, GOMAXPROCS: strconv.Itoa(n), PinCPU: true, Concurrency: max(c.Concurrency, 1) * n})
		}
	}
	return append(memory, []solo.Probe{
		{Name: "scrape-100k", Kind: KindScrapeLoad, Shapes: []harness.Shape{harness.Shape100k}, Sides: []string{"ours", "stock"},
			Window: c.Phase, Warmup: warmup, Scrapers: 1, Gzip: true, ScrapeEvery: time.Second, GOMAXPROCS: "1", PinCPU: true,
			SpansPerRequest: 1000},
		{Name: "floor", Kind: KindFloor, Shapes: []harness.Shape{harness.Shape1k, harness.Shape100k}, Sides: []string{"floor", "ours"},
			Window: c.Phase, Warmup: warmup, GOMAXPROCS: "1", SpansPerRequest: 1000, Rounds: floorRounds},
		{Name: "scrapers-100k", Kind: KindScrapeLoad, Shapes: []harness.Shape{harness.Shape100k}, Sides: []string{"ours"},
			Window: c.Phase, Warmup: warmup, Scrapers: 8, Gzip: false, GOMAXPROCS: "1", PinCPU: true, SpansPerRequest: 1000},
		{Name: "kafka-stale-100k", Kind: KindStaleness, Shapes: []harness.Shape{harness.Shape100k}, Sides: []string{"ours"},
			SpansPerRequest: 10, Backlog: c.Backlog, FlushInterval: 5 * time.Second},
	}...)
}

// Title describes a probe in one line.
func Title(p solo.Probe) string {
	return title(p) + p.Pinning()
}

func title(p solo.Probe) string {
	switch p.Kind {
	case KindMemory:
		return fmt.Sprintf("%s through OTLP as fast as acknowledged for %s (up to %s until %d flushes), RSS after each flush",
			p.Shapes[0], p.Window, p.MaxWindow, memoryFlushes)
	case KindScrapeLoad:
		enc := "identity"
		if p.Gzip {
			enc = "gzip"
		}
		every := ""
		if p.ScrapeEvery > 0 {
			every = fmt.Sprintf(", then %s with one %s scrape every %s", p.Window, enc, p.ScrapeEvery)
		}
		return fmt.Sprintf("%s, max OTLP rate: %s without scrapes%s, then %s with %d %s scraper(s) back to back",
			p.Shapes[0], p.Window, every, p.Window, p.Scrapers, enc)
	case KindFloor:
		return fmt.Sprintf("decode floor against our RED path, GOMAXPROCS=%s, max OTLP rate, %s per collector and shape in each of %d round(s), "+
			"in the order %s on odd rounds, reversed on even ones", p.GOMAXPROCS, p.Window, p.RoundCount(), strings.Join(p.Sides, ", "))
	case KindStaleness:
		return fmt.Sprintf("Kafka backlog of %s spans in messages of %d, %s, flush every %s", harness.HumanCount(float64(p.Backlog)),
			p.SpansPerRequest, p.Shapes[0], p.FlushInterval)
	}
	return string(p.Kind)
}
