package solo

import (
	"context"
	"sync"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// Load is a closed-loop generator (as fast as the collector acknowledges) sending a pool to one
// collector until End.
type Load struct {
	gen  *harness.Generator
	sink *harness.OTLPSink
	stop chan struct{}
	wg   sync.WaitGroup
}

// StartLoad starts sending pool to s's OTLP receiver, concurrency requests in flight.
func StartLoad(pool *harness.Pool, s *Instance, concurrency int) (*Load, error) {
	sink, err := harness.NewOTLPSink(pool, s.ep.OTLPGRPC)
	if err != nil {
		return nil, err
	}
	l := &Load{gen: harness.NewGenerator(pool, sink, 0, concurrency), sink: sink, stop: make(chan struct{})}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.gen.Run(l.stop)
	}()
	return l, nil
}

// End stops sending, waits for requests in flight, and returns the spans acknowledged.
func (l *Load) End() int64 {
	close(l.stop)
	l.wg.Wait()
	_ = l.sink.Close()
	return l.gen.Acked()
}

// Edges is the service graph edges in the requests acknowledged (harness.Pool.Edges).
func (l *Load) Edges() int64 { return l.gen.Edges() }

// MeasurePhase measures window of load l on s; sc, if not nil, are scrapers started for the
// phase and ended with it. It returns false when the window was cut short (collector killed,
// run interrupted).
func MeasurePhase(ctx context.Context, s *Instance, l *Load, name string, window time.Duration, sc *Scrapers) (Phase, bool) {
	from, spans0 := s.Elapsed(), l.gen.Acked()
	steal := s.StartSteal()
	ok := s.Wait(ctx, window)
	phase := Phase{Name: name, StealPercent: steal.Percent()}
	if sc != nil {
		phase.Scrapes = sc.End()
	}
	to, spans1 := s.Elapsed(), l.gen.Acked()
	samples := s.Samples()
	phase.Seconds = (to - from).Seconds()
	phase.Spans = spans1 - spans0
	phase.SpansPerSec = float64(phase.Spans) / phase.Seconds
	phase.CPUPercent = CPUBetween(samples, from.Seconds(), to.Seconds())
	phase.RSSMaxMiB, phase.RSSEndMiB = RSSBetween(samples, from.Seconds(), to.Seconds())
	return phase, ok
}
