package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"context"
	"errors"
	"sync"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/intake"
)

var errShutdown = errors.New("tracegraph connector is shut down")

// ringMemory bounds the bytes of the batches queued and pooled: a batch is ~100 bytes per span.
const ringMemory = 64 << 20

// connectorImp is the tracegraph connector. Its data path, top to bottom, one file a stage:
//
//	ConsumeTraces (any number of goroutines; connector.go)
//	  reducer.reduce (reducer.go): CLIENT/SERVER/PRODUCER/CONSUMER spans → one halfBatch
//	  (batch.go) of half edges, no lock, no allocation once the pool is warm
//	  intake.Queue.Put (internal/intake): one pointer into the MPSC ring; waits if it is full
//	aggregator.run (one goroutine, aggregator.go)
//	  pairs halves in the pair table (pairs.go), records complete edges in the series table
//	  (edges.go), expires waiting halves into virtual nodes, and on each flush tick builds the
//	  metrics (flusher.go), which its sender goroutine hands to the next consumer
type connectorImp struct {
	p       *plan
	clock   clockwork.Clock
	reducer reducer
	hints   sizeHints
	pipe    *intake.Pipe[halfBatch]
	agg     *aggregator
	fl      *flusher
	tel     *telemetry
	tickers tickers

	startOnce    sync.Once
	started      bool
	shutdownOnce sync.Once
}

var _ consumer.Traces = (*connectorImp)(nil)

func newConnector(set component.TelemetrySettings, cfg *Config, next consumer.Metrics, clock clockwork.Clock) (*connectorImp, error) {
	p := newPlan(cfg)
	if id, ok := set.Resource.Attributes().Get("service.instance.id"); ok {
		p.writer = id.AsString()
	}
	pipe := intake.NewPipe(p.ringSize, ringMemory, halfBatches)
	tel, err := newTelemetry(set, pipe.Queue)
	if err != nil {
		return nil, err
	}
	c := &connectorImp{
		p:       p,
		clock:   clock,
		reducer: reducer{p: p},
		pipe:    pipe,
		tel:     tel,
	}
	c.fl = newFlusher(p, next, set.Logger, tel, clock)
	c.agg = newAggregator(p, pipe, clock, tel, c.fl)
	return c, nil
}

// Start starts the aggregator and the sender.
func (c *connectorImp) Start(context.Context, component.Host) error {
	c.startOnce.Do(func() {
		c.fl.start = pcommon.NewTimestampFromTime(c.clock.Now())
		if c.p.flushInterval > 0 {
			c.tickers.flush = c.clock.NewTicker(c.p.flushInterval)
		}
		c.tickers.expire = c.clock.NewTicker(c.p.expireEvery)
		c.tickers.clean = c.clock.NewTicker(c.p.cleanEvery)
		c.started = true
		go c.agg.run(c.tickers)
		go c.fl.run()
	})
	return nil
}

// Shutdown refuses new spans, waits for ConsumeTraces calls in flight, then drains the ring,
// expires the halves still waiting, flushes and waits until the next consumer has the metrics.
// It is idempotent.
func (c *connectorImp) Shutdown(ctx context.Context) error {
	var err error
	c.shutdownOnce.Do(func() {
		err = c.pipe.Close(ctx)
		if c.started {
			close(c.agg.stop)
			if werr := intake.Await(ctx, c.agg.done, c.fl.done); werr != nil {
				err = errors.Join(err, werr)
				return
			}
			c.tickers.stop()
		}
		c.tel.shutdown()
	})
	return err
}

// Capabilities implements consumer.Traces.
func (*connectorImp) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// ConsumeTraces reduces td to one batch of half edges and queues it for the aggregator. It
// holds no lock and, once the batch pool is warm, allocates nothing. When the ring is full it
// waits for room until ctx is done, and then returns the context's error with nothing taken.
func (c *connectorImp) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	b, ok := c.pipe.Take()
	if !ok {
		c.tel.droppedSpans.Add(int64(td.SpanCount()))
		return errShutdown
	}
	c.hints.fit(b)
	c.reducer.reduce(b, td)
	c.hints.raise(b)
	if err := c.pipe.Submit(ctx, b); err != nil {
		c.tel.droppedSpans.Add(int64(td.SpanCount()))
		return err
	}
	return nil
}
