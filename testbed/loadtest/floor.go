package loadtest

import (
	"context"
	"errors"
	"strconv"
)

// runFloor measures, shape by shape, the decode floor (the "floor" collector: OTLP receiver →
// a debug exporter that samples its output away, so the process does little beyond decoding the
// requests into pdata) and then our RED path on the same pool, each alone on the host with
// p.GOMAXPROCS. Ours ÷ floor is the share of the decode-bound maximum our path keeps.
func runFloor(ctx context.Context, p Probe, pc ProbeCollectors, pools *Pools, o Options, res *ProbeResult) error {
	for _, shape := range p.Shapes {
		pool, err := pools.Get(shape, p.SpansPerRequest)
		if err != nil {
			return err
		}
		err = eachSide(ctx, p, pc, pool, res, func(c Collector, run *ProbeRun) error {
			return floorRun(ctx, p, c, pool, o, run)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func floorRun(ctx context.Context, p Probe, c Collector, pool *Pool, o Options, run *ProbeRun) error {
	s, err := startSolo(ctx, c, o, p.Name+"-"+c.Name+"-"+strconv.Itoa(pool.Shape.Series()), probeEnv(p), p.PinCPU)
	if err != nil {
		return err
	}
	l, err := startLoad(pool, s, o.Concurrency)
	if err != nil {
		return errors.Join(err, finishRun(s, run))
	}
	if wait(ctx, s, p.Warmup) {
		phase, _ := measurePhase(ctx, s, l, "max rate", p.Window, nil)
		run.Phases = append(run.Phases, phase)
	}
	l.end()
	return finishRun(s, run)
}
