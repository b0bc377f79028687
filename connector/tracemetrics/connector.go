package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"context"
	"errors"
	"sync"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/otelcol-red/otelcol-red/internal/intake"
)

var errShutdown = errors.New("tracemetrics connector is shut down")

// connectorImp is the tracemetrics connector. Its data path, top to bottom, one file a stage:
//
//	ConsumeTraces (any number of goroutines; connector.go)
//	  reducer.reduce (reducer.go): spans → one deltaBatch (batch.go) of per-series deltas,
//	  each series under its key (key.go)
//	  intake.Queue.Put (internal/intake): one pointer into the MPSC ring; waits if it is full
//	aggregator.run (one goroutine, aggregator.go; owns the series tables, table.go)
//	  woken per wakeItems queued batches (wakeSeries series' worth) or by the flush ticker;
//	  apply folds batches into the active deltaBuffer (buffers.go); at the tick it swaps
//	  buffers and hands the filled one over
//	flusher.run (one goroutine, flusher.go)
//	  cumulative totals, pmetric.Metrics, next.ConsumeMetrics
//
// Every stage reads the configuration through one plan (plan.go).
type connectorImp struct {
	plan    *plan
	logger  *zap.Logger
	clock   clockwork.Clock
	reducer *reducer
	pipe    *intake.Pipe[deltaBatch]
	agg     *aggregator
	fl      *flusher
	tel     *telemetry

	startOnce    sync.Once
	started      bool
	shutdownOnce sync.Once
}

var _ consumer.Traces = (*connectorImp)(nil)

func newConnector(set component.TelemetrySettings, cfg *Config, next consumer.Metrics, d deps, instanceID string) (*connectorImp, error) {
	p, err := newPlan(cfg, readGates(), instanceID)
	if err != nil {
		return nil, err
	}
	// The free list holds up to ring_memory_mib of batches as well: beyond, the GC takes them.
	pipe := intake.NewPipe(p.ringSize, p.ringBytes, deltaBatches)
	tel, err := newTelemetry(set, pipe.Queue, p)
	if err != nil {
		return nil, err
	}
	c := &connectorImp{
		plan:    p,
		logger:  set.Logger,
		clock:   d.clock,
		reducer: newReducer(p, d.keyHash),
		pipe:    pipe,
		tel:     tel,
	}
	returned := make(chan *deltaBuffer, 1)
	toFlusher := make(chan *deltaBuffer, 1)
	returned <- newDeltaBuffer(len(p.families))
	c.agg = &aggregator{
		plan:      p,
		pipe:      pipe,
		hints:     &c.reducer.hints,
		wakeItems: wakeItems(pipe.Queue.Cap(), firstSeriesPerBatch),
		drainBuf:  pipe.Queue.DrainBuffer(),
		clock:     d.clock,
		services:  map[string]uint32{},
		epoch:     1, // 0 marks a series without a row
		active:    newDeltaBuffer(len(p.families)),
		returned:  returned,
		toFlusher: toFlusher,
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		tel:       tel,
		sel:       newSelector(p),
		demand:    newDemand(p, d.clock.Now().UnixNano()),
	}
	c.fl = &flusher{
		plan:        p,
		next:        next,
		logger:      set.Logger,
		tel:         tel,
		in:          toFlusher,
		returned:    returned,
		done:        make(chan struct{}),
		byRes:       make([][]int32, len(p.families)),
		intern:      newInterner(internLimit),
		orders:      make([][]uint32, len(p.families)),
		chunkPoints: d.chunkPoints,
	}
	for _, f := range p.families {
		c.agg.tables = append(c.agg.tables, &seriesTable{fam: f, keyHash: d.keyHash})
		c.fl.tables = append(c.fl.tables, &flushTable{fam: f})
	}
	if cfg.DimensionsCacheSize != 0 {
		set.Logger.Warn("dimensions_cache_size is deprecated and ignored; use aggregation_cardinality_limit or max_series")
	}
	return c, nil
}

// Start starts the aggregator and the flusher.
func (c *connectorImp) Start(context.Context, component.Host) error {
	c.startOnce.Do(func() {
		c.agg.ticker = c.clock.NewTicker(c.plan.flushInterval)
		c.started = true
		go c.agg.run()
		go c.fl.run()
	})
	return nil
}

// Shutdown refuses new spans, waits for ConsumeTraces calls in flight, then drains the ring,
// flushes everything aggregated so far and waits until the next consumer has it. It is
// idempotent.
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
			c.agg.ticker.Stop()
		}
		c.tel.shutdown()
	})
	return err
}

// Capabilities implements consumer.Traces.
func (*connectorImp) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// ConsumeTraces reduces td to one batch and queues it for the aggregator. It holds no lock
// and, once the batch pool is warm, allocates nothing. When the ring is full it waits for
// room until ctx is done, and then returns the context's error with nothing aggregated.
func (c *connectorImp) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	b, ok := c.pipe.Take()
	if !ok {
		c.tel.refusedSpans.Add(int64(td.SpanCount()))
		return errShutdown
	}
	b.ts = c.clock.Now().UnixNano()
	c.reducer.reduce(b, td)
	if err := c.pipe.Submit(ctx, b); err != nil {
		c.tel.refusedSpans.Add(int64(td.SpanCount()))
		return err
	}
	return nil
}
