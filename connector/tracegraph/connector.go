package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"errors"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/intake"
	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
	"github.com/otelcol-red/otelcol-red/internal/pipeline"
)

var errShutdown = errors.New("tracegraph connector is shut down")

// ringMemory bounds the bytes of the batches queued and pooled: a batch holds a 120-byte half
// per edge span (unsafe.Sizeof; 80 before halves carried their span's own IDs and times, for
// exemplars and the messaging latency), its dimensions and its strings.
const ringMemory = 64 << 20

// connectorImp is the tracegraph connector. It runs on the pipeline stage both trace
// connectors share (internal/pipeline); its data path, top to bottom, one file a stage:
//
//	ConsumeTraces (any number of goroutines), the stage's
//	  reducer.reduce (reducer.go): CLIENT/SERVER/PRODUCER/CONSUMER spans → one halfBatch
//	  (batch.go) of half edges (a CONSUMER span with links: one per link), no lock, no
//	  allocation once the pool is warm; one pointer into the intake ring (internal/intake),
//	  which waits if it is full
//	the consumer goroutine: aggregator.go
//	  pairs halves in the pair table (pairs.go), records complete edges, with their
//	  exemplars, in the series table (edges.go), expires waiting halves into virtual nodes and idle series on their own
//	  tickers, and at each flush tick copies the series into a snapshot (snapshot.go)
//	the flush goroutine: flusher.go
//	  builds the metrics of a snapshot and hands them to the next consumer
type connectorImp struct {
	// The pipeline stage is the component: Start, Shutdown, ConsumeTraces, Capabilities.
	*pipeline.Stage[halfBatch, *snapshot]

	pipe  *intake.Pipe[halfBatch]
	hints *intake.SizeHints
	agg   *aggregator
	tel   *telemetry
}

var _ consumer.Traces = (*connectorImp)(nil)

func newConnector(set component.TelemetrySettings, cfg *Config, next consumer.Metrics, clock clockwork.Clock) (*connectorImp, error) {
	p := newPlan(cfg)
	if id, ok := set.Resource.Attributes().Get("service.instance.id"); ok {
		p.writer = id.AsString()
	}
	pipe := intake.NewPipe(p.ringSize, ringMemory, halfBatches)
	tel, err := newTelemetry(set, pipe.Queue, p.late.Mode)
	if err != nil {
		return nil, err
	}
	hints := intake.NewSizeHints(numHints, maxHint)
	agg := newAggregator(p, clock, tel, hints, pipe.Queue.Cap())
	c := &connectorImp{pipe: pipe, hints: hints, agg: agg, tel: tel}
	red := reducer{p: p, hints: hints, filtered: &tel.filteredSpans}
	c.Stage = pipeline.New(pipeline.Settings[halfBatch, *snapshot]{
		Pipe: pipe,
		// now, once per request, is what late_spans judges the spans' end times against.
		Reduce: func(b *halfBatch, td ptrace.Traces) {
			b.now = clock.Now().UnixNano()
			red.reduce(b, td)
		},
		ReduceWire: func(b *halfBatch, d *otlpwire.Decoder) {
			b.now = clock.Now().UnixNano()
			red.reduceWire(b, d)
		},
		Consumer:      agg,
		Flusher:       newFlusher(p, next, set.Logger, tel),
		Spare:         new(snapshot),
		Clock:         clock,
		FlushInterval: p.flushInterval,
		Duties: []pipeline.Duty{
			{Every: p.expireEvery, Run: func(now int64) { agg.expireBefore(now, now) }},
			{Every: p.cleanEvery, Run: agg.clean},
		},
		ErrShutdown:     errShutdown,
		Refused:         &tel.droppedSpans,
		RefusedRequests: &tel.refusedRequests,
		Postponed:       &tel.flushesSkipped,
		Closed:          tel.shutdown,
	})
	return c, nil
}
