package loadtest

import (
	"context"
	"errors"
	"fmt"
)

// runFloor measures, shape by shape, the decode floor (the "floor" collector: OTLP receiver →
// a debug exporter that samples its output away, so the process does little beyond decoding the
// requests into pdata) and our RED path on the same pool, each alone on the host with
// p.GOMAXPROCS. Ours ÷ floor is the share of the decode-bound maximum our path keeps.
//
// Each side runs p.Rounds times, a fresh collector each time, the sides interleaved round after
// round in the order of roundOrder: on a shared host one phase per side moves by more than the
// difference being measured, and a fixed floor-then-ours order would add the host's drift to
// that difference. The report takes medians over the rounds (floorsummary.go).
func runFloor(ctx context.Context, p Probe, pc ProbeCollectors, pools *Pools, o Options, res *ProbeResult) error {
	defer func() { res.Floor = summarizeFloor(res.Runs) }()
	for _, shape := range p.Shapes {
		pool, err := pools.Get(shape, p.SpansPerRequest)
		if err != nil {
			return err
		}
		err = eachRound(ctx, p, pc, pool, res, func(c Collector, run *ProbeRun) error {
			return floorRun(ctx, p, c, pool, o, run)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// eachRound runs fn for p's collectors p.Rounds times on pool, in the order roundOrder gives
// each round, and appends their runs to res.
func eachRound(ctx context.Context, p Probe, pc ProbeCollectors, pool *Pool, res *ProbeResult,
	fn func(c Collector, run *ProbeRun) error,
) error {
	for round := 1; round <= p.rounds(); round++ {
		if err := runSides(ctx, p, pc, pool, res, roundOrder(p.Sides, round), round, fn); err != nil {
			return err
		}
	}
	return nil
}

func floorRun(ctx context.Context, p Probe, c Collector, pool *Pool, o Options, run *ProbeRun) error {
	label := fmt.Sprintf("%s-%s-%d-r%d", p.Name, c.Name, pool.Shape.Series(), run.Round)
	s, err := startSolo(ctx, c, o, label, probeEnv(p), p.pinned())
	if err != nil {
		return err
	}
	l, err := startLoad(pool, s, o.Concurrency)
	if err != nil {
		return errors.Join(err, finishRun(s, run))
	}
	if wait(ctx, s, p.Warmup) {
		profiled := startCPUProfile(ctx, s, o, label, p.Window, run)
		phase, _ := measurePhase(ctx, s, l, "max rate", p.Window, nil)
		run.Phases = append(run.Phases, phase)
		profiled()
	}
	l.end()
	return finishRun(s, run)
}
