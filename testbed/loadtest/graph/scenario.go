// Package graph runs the service graph scenario: our RED path, ours with the service graph and
// the stock twin with servicegraph, one at a time on one CPU each, on a pre-encoded call graph,
// and writes GRAPH.md.
package graph

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

// The service graph scenario runs three collectors one at a time on the same pre-encoded call
// graph (NewPool), each alone on one CPU with GOMAXPROCS=1 and the load generator on the
// others, at max OTLP rate: our RED path alone ("red": tracemetrics → cachedprom), ours with the
// service graph ("ours": tracemetrics + tracegraph → cachedprom) and the stock twin with the
// service graph ("stock": spanmetrics + servicegraph → prometheus). Red against ours is what the
// graph costs; ours against stock is the comparison. After the load each side must count every
// span it acknowledged as a RED call and every client span as a service graph request.

// Kind is the scenario's probe kind.
const Kind solo.ProbeKind = "graph"

// Scenario is the scenario's name, as -run selects it.
const Scenario = "graph-max-rate"

// RequestsMetric is servicegraph's request counter as Prometheus exposes it; tracegraph keeps
// the name.
const RequestsMetric = "traces_service_graph_request_total"

// sideOrder are the collectors of the scenario in the order of odd rounds.
var sideOrder = []string{"red", "ours", "stock"}

// PlanConfig sizes the service graph scenario.
type PlanConfig struct {
	// FlushInterval is the run's flush interval; the warm-up is one flush and 5 s.
	FlushInterval time.Duration
	// Phase is the measured window per collector.
	Phase time.Duration
	// Rounds is how many times each side runs, the order reversed on even rounds (0: 1).
	Rounds int
}

// Plan returns the scenario as a probe: pinned, GOMAXPROCS=1, max rate, the three sides.
func Plan(c PlanConfig) []solo.Probe {
	return []solo.Probe{{
		Name: Scenario, Kind: Kind, Sides: sideOrder, Window: c.Phase, Warmup: c.FlushInterval + 5*time.Second,
		GOMAXPROCS: "1", PinCPU: true, SpansPerRequest: 1000, Rounds: max(c.Rounds, 1),
	}}
}

// Title describes the scenario in one line, with the placement of its collectors.
func Title(p solo.Probe) string { return title(p) + p.Pinning() }

// title describes the scenario in one line, as GRAPH.md heads it.
func title(p solo.Probe) string {
	return fmt.Sprintf("service graph at max OTLP rate, %s per collector after a warm-up of %s, %d round(s) in the order %s, "+
		"reversed on even rounds", p.Window, p.Warmup, p.RoundCount(), strings.Join(p.Sides, ", "))
}

// Collectors are the scenario's three sides.
type Collectors struct {
	// Red is our RED path alone (configs/default.yaml), Ours it with tracegraph
	// (configs/tracegraph.yaml), Stock the stock twin with spanmetrics and servicegraph.
	Red, Ours, Stock harness.Collector
}

// sides names the collectors by side.
func (gc Collectors) sides() solo.Collectors {
	return solo.Collectors{"red": gc.Red, "ours": gc.Ours, "stock": gc.Stock}
}

// Result is what the scenario measured: a run per side and round.
type Result struct {
	Probe solo.Probe `json:"probe"`
	Title string     `json:"title"`
	Graph Shape      `json:"graph"`
	// PassRequests, PassSpans and PassEdges are the requests, spans and client spans of one pass
	// of the pool.
	PassRequests int       `json:"pass_requests"`
	PassSpans    int       `json:"pass_spans"`
	PassEdges    int       `json:"pass_edges"`
	Start        time.Time `json:"start"`
	End          time.Time `json:"end"`
	Runs         []Run     `json:"runs"`
	Error        string    `json:"error,omitempty"`
}

// Run is one collector's run: the probe's figures and the counts after the load.
type Run struct {
	solo.ProbeRun
	// HasGraph is set for the sides that build a service graph.
	HasGraph bool `json:"has_graph"`
	// Spans and Edges are what the collector acknowledged over the whole load, warm-up included:
	// the spans are the RED calls it must count, the client spans among them (Pool.Edges) the
	// service graph requests (each paired with its server span, a database call, or, for a
	// call whose server span was not sent before the load stopped, a virtual node after the ttl).
	Spans int64 `json:"spans"`
	Edges int64 `json:"edges"`
	// CallsCounted and EdgesCounted are the sums of CallsMetric and RequestsMetric in the
	// last scrape after the load; Counted says a scrape was read at all.
	Counted      bool  `json:"counted"`
	CallsCounted int64 `json:"calls_counted"`
	EdgesCounted int64 `json:"edges_counted"`
	// CountedAfterSeconds is when, after the load, that scrape was taken.
	CountedAfterSeconds float64 `json:"counted_after_seconds"`
}

// Exact tells whether the run counted every call and, with a graph, every edge.
func (r Run) Exact() bool {
	return r.Counted && r.CallsCounted == r.Spans && (!r.HasGraph || r.EdgesCounted == r.Edges)
}

// Measure runs p's sides, round after round, on pool (a NewPool).
func Measure(ctx context.Context, p solo.Probe, gc Collectors, pool *Pool, o harness.Options) *Result {
	res := &Result{Probe: p, Title: title(p), Start: time.Now().UTC(), Graph: pool.Graph}
	res.PassRequests = len(pool.Encoded)
	for i := range pool.Encoded {
		res.PassSpans += pool.SpansOf(i)
		res.PassEdges += pool.Edges[i]
	}
	defer func() { res.End = time.Now().UTC() }()
	cs := gc.sides()
	for round := 1; round <= p.RoundCount(); round++ {
		for _, name := range solo.RoundOrder(p.Sides, round) {
			c, err := cs.Get(name)
			if err != nil {
				res.Error = err.Error()
				return res
			}
			run := Run{
				ProbeRun: solo.ProbeRun{Collector: name, Round: round, Binary: c.Binary, Config: c.Config, Series: res.Graph.Series(),
					LoadAverage: harness.LoadAverage()},
				HasGraph: name != "red",
			}
			if err := runSide(ctx, p, c, pool.Pool, o, &run); err != nil {
				run.Error = harness.JoinErr(run.Error, err.Error())
			}
			res.Runs = append(res.Runs, run)
			if ctx.Err() != nil {
				res.Error = ctx.Err().Error()
				return res
			}
		}
	}
	return res
}

func runSide(ctx context.Context, p solo.Probe, c harness.Collector, pool *harness.Pool, o harness.Options, run *Run) error {
	label := fmt.Sprintf("%s-%s-r%d", p.Name, c.Name, run.Round)
	s, err := solo.Start(ctx, c, o, label, p.Env(), p.Pinned())
	if err != nil {
		return err
	}
	l, err := solo.StartLoad(pool, s, o.Concurrency)
	if err != nil {
		return errors.Join(err, s.Finish(&run.ProbeRun))
	}
	if s.Wait(ctx, p.Warmup) {
		phase, _ := solo.MeasurePhase(ctx, s, l, "max rate", p.Window, nil)
		run.Phases = append(run.Phases, phase)
	}
	run.Spans = l.End()
	run.Edges = l.Edges()
	select {
	case <-s.Killed():
	default:
		err = countAfterLoad(ctx, s, o, run)
	}
	return errors.Join(err, s.Finish(&run.ProbeRun))
}

// countWait bounds the wait after the load for the counters to add up: the halves still
// waiting expire after the store's ttl (10 s on both sides) and a run of the expiry loop (2 s),
// then a flush (15 s by default) carries them; scrapes of 100k series take seconds each on one core.
func countWait(o harness.Options) time.Duration {
	return min(o.DrainTimeout, 4*o.FlushInterval+30*time.Second)
}

// countAfterLoad scrapes the collector after the load until its calls (and edges) add up to what
// it acknowledged or countWait passes; what is missing then is lost, a result. It fails only
// when no scrape could be read.
func countAfterLoad(ctx context.Context, s *solo.Instance, o harness.Options, run *Run) error {
	end := time.Now()
	limit := countWait(o)
	scraper := harness.NewCountingScraper(limit)
	defer scraper.Close()
	metrics := []string{o.CallsMetric}
	if run.HasGraph {
		metrics = append(metrics, RequestsMetric)
	}
	// Nothing can add up before the next flush.
	if !s.Wait(ctx, o.FlushInterval+time.Second) {
		return ctx.Err()
	}
	var lastErr error
	for {
		sums, err := scraper.SumCounters(ctx, s.MetricsURL(), metrics...)
		lastErr = err
		if err == nil {
			run.Counted = true
			run.CallsCounted = int64(sums[0])
			if run.HasGraph {
				run.EdgesCounted = int64(sums[1])
			}
			run.CountedAfterSeconds = time.Since(end).Seconds()
			if run.Exact() {
				return nil
			}
		}
		if time.Since(end) > limit || !s.Wait(ctx, 3*time.Second) {
			break
		}
	}
	if !run.Counted && lastErr != nil {
		return fmt.Errorf("counters not read within %s after the load: %w", limit, lastErr)
	}
	return nil
}
