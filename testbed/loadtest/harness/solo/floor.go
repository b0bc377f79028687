package solo

import (
	"context"
	"errors"
	"fmt"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// RunFloor measures, shape by shape, the decode floor (the "floor" collector: OTLP receiver →
// a debug exporter that samples its output away, so the process does little beyond decoding the
// requests into pdata) and our RED path on the same pool, each alone on the host with
// p.GOMAXPROCS, and any further side of p (the scaling plan adds the stock twin). Ours ÷ floor is
// the share of the decode-bound maximum our path keeps.
//
// Each side runs p.Rounds times, a fresh collector each time, the sides interleaved round after
// round in the order of RoundOrder: on a shared host one phase per side moves by more than the
// difference being measured, and a fixed floor-then-ours order would add the host's drift to
// that difference. The report takes medians over the rounds (floorsummary.go).
func RunFloor(ctx context.Context, p Probe, cs Collectors, pools *Pools, o harness.Options, res *ProbeResult) error {
	defer func() { res.Floor = SummarizeFloor(res.Runs) }()
	for _, shape := range p.Shapes {
		pool, err := pools.Get(shape, p.SpansPerRequest)
		if err != nil {
			return err
		}
		err = EachRound(ctx, p, cs, pool, res, func(c harness.Collector, run *ProbeRun) error {
			return floorRun(ctx, p, c, pool, o, run)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func floorRun(ctx context.Context, p Probe, c harness.Collector, pool *harness.Pool, o harness.Options, run *ProbeRun) error {
	label := fmt.Sprintf("%s-%s-%d-r%d", p.Name, c.Name, pool.Shape.Series(), run.Round)
	s, err := Start(ctx, c, o, label, p.Env(), p.Pinned())
	if err != nil {
		return err
	}
	l, err := StartLoad(pool, s, o.Concurrency)
	if err != nil {
		return errors.Join(err, s.Finish(run))
	}
	if s.Wait(ctx, p.Warmup) {
		profiled := StartCPUProfile(ctx, s, o, label, p.Window, run)
		phase, _ := MeasurePhase(ctx, s, l, "max rate", p.Window, nil)
		run.Phases = append(run.Phases, phase)
		profiled()
	}
	l.End()
	return s.Finish(run)
}
