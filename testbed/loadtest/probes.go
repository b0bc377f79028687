package loadtest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ProbeKind says what a probe measures.
type ProbeKind string

const (
	// ProbeMemory loads a large cardinality as fast as acknowledged and records RSS after every
	// flush, gzip scrape latency and the ingest rate, for each collector in turn.
	ProbeMemory ProbeKind = "memory"
	// ProbeScrapeLoad measures ingest and RSS without scrapes, then with Scrapers clients scraping
	// back to back, in one process.
	ProbeScrapeLoad ProbeKind = "scrape-load"
	// ProbeFloor measures the decode floor (OTLP → pdata → a sampled debug exporter) and our RED
	// path on one core, in the same run, at each shape.
	ProbeFloor ProbeKind = "floor"
	// ProbeStaleness drains a Kafka backlog of small messages and measures how late flushes are.
	ProbeStaleness ProbeKind = "staleness"
	// ProbeScaling is ProbeFloor with the stock twin as a third side, at one GOMAXPROCS of the
	// scaling plan (scaling.go).
	ProbeScaling ProbeKind = "scaling"
	// ProbeGraph runs our RED path, ours with the service graph and the stock twin with
	// servicegraph on a call graph, one core each (graph.go).
	ProbeGraph ProbeKind = "graph"
	// ProbeNative compares exponential histograms served as native histograms (ours, stock) and
	// ours with classic histograms: ingest, memory per series, protobuf and text scrapes (native.go).
	ProbeNative ProbeKind = "native"
)

// Probe is one scenario of the memory and overload plan.
type Probe struct {
	Name string    `json:"name"`
	Kind ProbeKind `json:"kind"`
	// Shapes is the cardinality; ProbeFloor runs each in turn, the others take the first.
	Shapes []Shape `json:"shapes"`
	// Sides names the collectors measured, one after the other: "ours", "stock", "floor".
	Sides []string `json:"sides"`
	// Window is the load window (ProbeMemory) or the length of each phase (ProbeScrapeLoad,
	// ProbeFloor).
	Window time.Duration `json:"window_ns"`
	// MaxWindow extends a ProbeMemory load beyond Window, up to this, until three flushes were
	// delivered.
	MaxWindow time.Duration `json:"max_window_ns,omitempty"`
	// Warmup is load sent before the first phase so that every series exists and has been flushed.
	Warmup time.Duration `json:"warmup_ns,omitempty"`
	// Scrapers is the number of clients scraping back to back in the second phase of
	// ProbeScrapeLoad; Gzip says whether they ask for gzip.
	Scrapers int  `json:"scrapers,omitempty"`
	Gzip     bool `json:"gzip,omitempty"`
	// ScrapeEvery adds, before the back-to-back phase of ProbeScrapeLoad, a phase with one
	// client scraping at this period, the way Prometheus does.
	ScrapeEvery time.Duration `json:"scrape_every_ns,omitempty"`
	// GOMAXPROCS overrides the collectors' scheduler width ("1" for the floor).
	GOMAXPROCS string `json:"gomaxprocs,omitempty"`
	// PinCPU runs each collector alone on as many CPUs as its GOMAXPROCS (one when unset) and the
	// testbed (load generator, scrapers) on the others, so the probe measures what the collector
	// spends, not its share of contested CPUs.
	PinCPU bool `json:"pin_cpu,omitempty"`
	// Concurrency overrides the run's OTLP requests in flight; 0 keeps it.
	Concurrency int `json:"concurrency,omitempty"`
	// SpansPerRequest sizes the requests or Kafka messages.
	SpansPerRequest int `json:"spans_per_request"`
	// Backlog is the spans written to the topic before the collector starts (ProbeStaleness).
	Backlog int64 `json:"backlog,omitempty"`
	// FlushInterval overrides the run's flush interval.
	FlushInterval time.Duration `json:"flush_interval_ns,omitempty"`
	// Rounds is how many times ProbeFloor measures each side at each shape, the sides interleaved
	// round after round (see roundOrder); 0 counts as 1. One phase per side is too noisy on a
	// shared host to compare two collectors whose costs differ by tens of percent.
	Rounds int `json:"rounds,omitempty"`
	// TimedScrapes is how many scrapes ProbeNative times per side and format.
	TimedScrapes int `json:"timed_scrapes,omitempty"`
}

// DefaultFloorRounds is the floor probe's rounds when MemoryPlanConfig.FloorRounds is 0: the
// least that has a median which one disturbed phase cannot move.
const DefaultFloorRounds = 3

// pinned returns the CPUs a collector of p runs alone on: 0 without PinCPU, else its GOMAXPROCS
// (1 when unset or not a number).
func (p Probe) pinned() int {
	if !p.PinCPU {
		return 0
	}
	if n, err := strconv.Atoi(p.GOMAXPROCS); err == nil && n > 0 {
		return n
	}
	return 1
}

// rounds returns p.Rounds, at least 1.
func (p Probe) rounds() int {
	return max(p.Rounds, 1)
}

// roundOrder returns the order in which round (1-based) runs sides: as listed on odd rounds,
// reversed on even ones, so that over the rounds neither side always follows the other (a host
// that slows down or speeds up during the probe then weighs on both sides alike).
func roundOrder(sides []string, round int) []string {
	out := append([]string(nil), sides...)
	if round%2 == 0 {
		slices.Reverse(out)
	}
	return out
}

// Shape1M is the million-series cardinality of the memory probe.
var Shape1M = Shape{Services: 1000, SpanNames: 250}

// MemoryPlanConfig sizes the memory and overload plan.
type MemoryPlanConfig struct {
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

// MemoryPlan is the set `make testbed-memory` runs: the memory work's and the overload items'
// scenarios, each bounded in time and (through Options.RSSCap) in memory.
func MemoryPlan(c MemoryPlanConfig) []Probe {
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
	memory := []Probe{{Name: "memory-1m", Kind: ProbeMemory, Shapes: []Shape{Shape1M}, Sides: []string{"ours", "stock"},
		Window: window, MaxWindow: max(window, 4*time.Minute), SpansPerRequest: 1000}}
	if len(c.MemoryProcs) > 0 {
		memory = memory[:0]
		for _, n := range c.MemoryProcs {
			memory = append(memory, Probe{Name: fmt.Sprintf("memory-1m-gomaxprocs-%d", n), Kind: ProbeMemory,
				Shapes: []Shape{Shape1M}, Sides: []string{"ours", "stock"}, Window: window, MaxWindow: max(window, 4*time.Minute),
				SpansPerRequest: 1000, GOMAXPROCS: strconv.Itoa(n), PinCPU: true, Concurrency: max(c.Concurrency, 1) * n})
		}
	}
	return append(memory, []Probe{
		{Name: "scrape-100k", Kind: ProbeScrapeLoad, Shapes: []Shape{Shape100k}, Sides: []string{"ours", "stock"},
			Window: c.Phase, Warmup: warmup, Scrapers: 1, Gzip: true, ScrapeEvery: time.Second, GOMAXPROCS: "1", PinCPU: true,
			SpansPerRequest: 1000},
		{Name: "floor", Kind: ProbeFloor, Shapes: []Shape{Shape1k, Shape100k}, Sides: []string{"floor", "ours"},
			Window: c.Phase, Warmup: warmup, GOMAXPROCS: "1", SpansPerRequest: 1000, Rounds: floorRounds},
		{Name: "scrapers-100k", Kind: ProbeScrapeLoad, Shapes: []Shape{Shape100k}, Sides: []string{"ours"},
			Window: c.Phase, Warmup: warmup, Scrapers: 8, Gzip: false, GOMAXPROCS: "1", PinCPU: true, SpansPerRequest: 1000},
		{Name: "kafka-stale-100k", Kind: ProbeStaleness, Shapes: []Shape{Shape100k}, Sides: []string{"ours"},
			SpansPerRequest: 10, Backlog: c.Backlog, FlushInterval: 5 * time.Second},
	}...)
}

// KeepSides keeps, of each probe of plan, only the sides named in sides (comma-separated "ours",
// "stock", "floor"), and drops the probes left with none. An empty sides keeps plan as it is.
func KeepSides(plan []Probe, sides string) ([]Probe, error) {
	if sides == "" {
		return plan, nil
	}
	keep := map[string]bool{}
	for name := range strings.SplitSeq(sides, ",") {
		name = strings.TrimSpace(name)
		if name != "ours" && name != "stock" && name != "floor" {
			return nil, fmt.Errorf("-sides: %q is not a collector, use ours, stock or floor", name)
		}
		keep[name] = true
	}
	var out []Probe
	for _, p := range plan {
		var kept []string
		for _, side := range p.Sides {
			if keep[side] {
				kept = append(kept, side)
			}
		}
		if len(kept) > 0 {
			p.Sides = kept
			out = append(out, p)
		}
	}
	return out, nil
}

// Title describes a probe in one line.
func (p Probe) Title() string {
	t := p.title()
	if n := p.pinned(); n > 0 {
		cpus := "one CPU"
		if n > 1 {
			cpus = fmt.Sprintf("%d CPUs", n)
		}
		t += fmt.Sprintf("; each collector (GOMAXPROCS=%s) alone on %s, the load generator and scrapers on the others", p.GOMAXPROCS, cpus)
	}
	return t
}

func (p Probe) title() string {
	switch p.Kind {
	case ProbeMemory:
		return fmt.Sprintf("%s through OTLP as fast as acknowledged for %s (up to %s until %d flushes), RSS after each flush",
			p.Shapes[0], p.Window, p.MaxWindow, memoryFlushes)
	case ProbeScrapeLoad:
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
	case ProbeFloor:
		return fmt.Sprintf("decode floor against our RED path, GOMAXPROCS=%s, max OTLP rate, %s per collector and shape in each of %d round(s), "+
			"in the order %s on odd rounds, reversed on even ones", p.GOMAXPROCS, p.Window, p.rounds(), strings.Join(p.Sides, ", "))
	case ProbeScaling:
		return fmt.Sprintf("GOMAXPROCS=%s, max OTLP rate (%d requests in flight) at %s, %s per collector and shape after a warm-up of %s, "+
			"%d round(s) in the order %s, reversed on even rounds", p.GOMAXPROCS, p.Concurrency, shapeList(p.Shapes), p.Window, p.Warmup,
			p.rounds(), strings.Join(p.Sides, ", "))
	case ProbeGraph:
		return graphTitle(p)
	case ProbeNative:
		return fmt.Sprintf("%s, max OTLP rate: warm-up %s, %s measured, then idle for one flush and 5 s, then %d gzip scrapes, one a second or back to back when slower, "+
			"per side (protobuf as Prometheus 3 asks with native histograms for %s, text for %s)", p.Shapes[0], p.Warmup, p.Window,
			p.TimedScrapes, strings.Join(sidesScrapedIn(p.Sides, FormatProtobuf), ", "), strings.Join(sidesScrapedIn(p.Sides, FormatText), ", "))
	case ProbeStaleness:
		return fmt.Sprintf("Kafka backlog of %s spans in messages of %d, %s, flush every %s", humanCount(float64(p.Backlog)),
			p.SpansPerRequest, p.Shapes[0], p.FlushInterval)
	}
	return string(p.Kind)
}

// ProbeCollectors are the binaries and configs a probe can run.
type ProbeCollectors struct {
	Ours, Stock, Floor Collector
	// OursMemory is ours for ProbeMemory: series caps lifted to match the stock side, which has
	// none, and the pprof extension for the heap profile.
	OursMemory Collector
	// OursKafka is our Kafka gateway config, for ProbeStaleness.
	OursKafka Collector
	// OursClassic is ours with classic histograms beside ours with exponential ones (Ours), for
	// ProbeNative.
	OursClassic Collector
}

func (pc ProbeCollectors) byName(name string, kind ProbeKind) (Collector, error) {
	switch name {
	case "ours":
		if kind == ProbeMemory {
			return pc.OursMemory, nil
		}
		return pc.Ours, nil
	case "stock":
		return pc.Stock, nil
	case "floor":
		return pc.Floor, nil
	case "ours-classic":
		return pc.OursClassic, nil
	}
	return Collector{}, fmt.Errorf("unknown collector %q", name)
}

// RunProbe runs p and returns what it measured. Pools come from pools (built on first use).
func RunProbe(ctx context.Context, p Probe, pc ProbeCollectors, pools *Pools, o Options) *ProbeResult {
	res := &ProbeResult{Probe: p, Title: p.Title(), Start: time.Now().UTC(), LoadAverage: LoadAverage()}
	if p.FlushInterval > 0 {
		o.FlushInterval = p.FlushInterval
	}
	if p.Concurrency > 0 {
		o.Concurrency = p.Concurrency
	}
	var err error
	switch p.Kind {
	case ProbeMemory:
		err = runMemory(ctx, p, pc, pools, o, res)
	case ProbeScrapeLoad:
		err = runScrapeLoad(ctx, p, pc, pools, o, res)
	case ProbeFloor, ProbeScaling:
		err = runFloor(ctx, p, pc, pools, o, res)
	case ProbeStaleness:
		err = runStaleness(ctx, p, pc, pools, o, res)
	case ProbeNative:
		err = runNative(ctx, p, pc, pools, o, res)
	default:
		err = fmt.Errorf("unknown probe kind %q", p.Kind)
	}
	if err != nil {
		res.Error = err.Error()
	}
	res.End = time.Now().UTC()
	return res
}

// Pools builds each (shape, spans per request) pool once per run.
type Pools struct {
	pools map[poolKey]*Pool
}

type poolKey struct {
	shape           Shape
	spansPerRequest int
}

// Get returns the pool for shape with spansPerRequest spans per request.
func (ps *Pools) Get(shape Shape, spansPerRequest int) (*Pool, error) {
	if ps.pools == nil {
		ps.pools = map[poolKey]*Pool{}
	}
	k := poolKey{shape, spansPerRequest}
	if p, ok := ps.pools[k]; ok {
		return p, nil
	}
	p, err := NewEncodedPool(shape, spansPerRequest, 1)
	if err != nil {
		return nil, err
	}
	ps.pools[k] = p
	return p, nil
}

// Drop forgets the pool for shape, so that its memory goes back before the next probe.
func (ps *Pools) Drop(shape Shape, spansPerRequest int) {
	delete(ps.pools, poolKey{shape, spansPerRequest})
}
