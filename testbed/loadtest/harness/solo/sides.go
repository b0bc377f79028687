package solo

import (
	"context"
	"fmt"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// Collectors are the binaries and configs a probe's sides run, by side name ("ours", "stock",
// "floor", ...).
type Collectors map[string]harness.Collector

// Get returns the collector of the side called name.
func (cs Collectors) Get(name string) (harness.Collector, error) {
	if c, ok := cs[name]; ok {
		return c, nil
	}
	return harness.Collector{}, fmt.Errorf("unknown collector %q", name)
}

// RunProbe runs p through measure and returns what it measured: the result carries p, its title,
// the host's load average, the start and end times and measure's error. measure gets o with p's
// flush interval and requests in flight where p sets them.
func RunProbe(p Probe, title string, o harness.Options, measure func(o harness.Options, res *ProbeResult) error) *ProbeResult {
	res := &ProbeResult{Probe: p, Title: title, Start: time.Now().UTC(), LoadAverage: harness.LoadAverage()}
	if p.FlushInterval > 0 {
		o.FlushInterval = p.FlushInterval
	}
	if p.Concurrency > 0 {
		o.Concurrency = p.Concurrency
	}
	if err := measure(o, res); err != nil {
		res.Error = err.Error()
	}
	res.End = time.Now().UTC()
	return res
}

// EachSide runs fn for each of p's collectors in turn on pool and appends their runs to res.
func EachSide(ctx context.Context, p Probe, cs Collectors, pool *harness.Pool, res *ProbeResult,
	fn func(c harness.Collector, run *ProbeRun) error,
) error {
	return runSides(ctx, cs, pool, res, p.Sides, 0, fn)
}

// EachSideOnPool runs fn for each of p's collectors in turn on the pool of p's first shape, and
// drops the pool afterwards so that its memory goes back before the next probe.
func EachSideOnPool(ctx context.Context, p Probe, cs Collectors, pools *Pools, res *ProbeResult,
	fn func(c harness.Collector, pool *harness.Pool, run *ProbeRun) error,
) error {
	shape := p.Shapes[0]
	pool, err := pools.Get(shape, p.SpansPerRequest)
	if err != nil {
		return err
	}
	defer pools.Drop(shape, p.SpansPerRequest)
	return EachSide(ctx, p, cs, pool, res, func(c harness.Collector, run *ProbeRun) error {
		return fn(c, pool, run)
	})
}

// EachRound runs fn for p's collectors p.RoundCount() times on pool, in the order RoundOrder
// gives each round, and appends their runs to res.
func EachRound(ctx context.Context, p Probe, cs Collectors, pool *harness.Pool, res *ProbeResult,
	fn func(c harness.Collector, run *ProbeRun) error,
) error {
	for round := 1; round <= p.RoundCount(); round++ {
		if err := runSides(ctx, cs, pool, res, RoundOrder(p.Sides, round), round, fn); err != nil {
			return err
		}
	}
	return nil
}

// runSides runs fn for the collectors named in sides, in that order, on pool and appends their
// runs, marked with round (0 outside rounds), to res.
func runSides(ctx context.Context, cs Collectors, pool *harness.Pool, res *ProbeResult, sides []string, round int,
	fn func(c harness.Collector, run *ProbeRun) error,
) error {
	for _, name := range sides {
		c, err := cs.Get(name)
		if err != nil {
			return err
		}
		run := ProbeRun{Collector: name, Round: round, Binary: c.Binary, Config: c.Config, Series: pool.Shape.Series(), LoadAverage: harness.LoadAverage()}
		if err := fn(c, &run); err != nil {
			run.Error = harness.JoinErr(run.Error, err.Error())
		}
		res.Runs = append(res.Runs, run)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// Pools builds each (shape, spans per request) pool once per run.
type Pools struct {
	pools map[poolKey]*harness.Pool
}

type poolKey struct {
	shape           harness.Shape
	spansPerRequest int
}

// Get returns the pool for shape with spansPerRequest spans per request.
func (ps *Pools) Get(shape harness.Shape, spansPerRequest int) (*harness.Pool, error) {
	if ps.pools == nil {
		ps.pools = map[poolKey]*harness.Pool{}
	}
	k := poolKey{shape, spansPerRequest}
	if p, ok := ps.pools[k]; ok {
		return p, nil
	}
	p, err := harness.NewEncodedPool(shape, spansPerRequest, 1)
	if err != nil {
		return nil, err
	}
	ps.pools[k] = p
	return p, nil
}

// Drop forgets the pool for shape, so that its memory goes back before the next probe.
func (ps *Pools) Drop(shape harness.Shape, spansPerRequest int) {
	delete(ps.pools, poolKey{shape, spansPerRequest})
}
