package compare

import (
	"context"
	"sync"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// runOTLP sends the same paced (or closed-loop) OTLP load to both collectors for the window.
func runOTLP(ctx context.Context, sc Scenario, pool *harness.Pool, o Options, sides []*side, scraper *harness.Scraper, res *Result) error {
	if err := launchCollectors(sc, o, sides, nil); err != nil {
		return err
	}
	if err := waitHealthy(ctx, o, sides, scraper); err != nil {
		return err
	}
	for _, s := range sides {
		sink, err := harness.NewOTLPSink(pool, s.ep.OTLPGRPC)
		if err != nil {
			return err
		}
		defer sink.Close()
		s.gen = harness.NewGenerator(pool, sink, sc.Rate, o.Concurrency)
	}

	start := time.Now()
	cpu0 := cpuTimes(sides)
	monitorDone := startMonitors(ctx, o, sides, scraper, start, func(s *side) int64 { return s.gen.Acked() })

	stop := make(chan struct{})
	var gens sync.WaitGroup
	for _, s := range sides {
		gens.Add(1)
		go func() {
			defer gens.Done()
			s.gen.Run(stop)
		}()
	}
	select {
	case <-time.After(o.Duration):
	case <-ctx.Done():
	}
	close(stop)
	gens.Wait()
	window := time.Since(start)
	cpu1 := cpuTimes(sides)
	monitorDone()
	res.Window = window

	for i, s := range sides {
		s.out.Sent = s.gen.Acked()
		s.out.Retries = s.gen.Failures()
		s.out.Missed = s.gen.Missed()
		s.out.SpansPerSec = float64(s.out.Sent) / window.Seconds()
		summarise(s, cpu1[i]-cpu0[i], window)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return drain(ctx, o, sides)
}
