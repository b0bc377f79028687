package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/jonboulle/clockwork"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/aggregate"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/flush"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/reduce"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/telemetry"
	"github.com/otelcol-red/otelcol-red/internal/intake"
	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
	"github.com/otelcol-red/otelcol-red/internal/pipeline"
	"github.com/otelcol-red/otelcol-red/internal/spanfilter"
)

var errShutdown = errors.New("tracemetrics connector is shut down")

// connectorImp is the tracemetrics connector. It runs on the pipeline stage both trace
// connectors share (internal/pipeline); its data path, top to bottom, one package a stage:
//
//	ConsumeTraces (any number of goroutines, the stage's; pdata, or wire traces decoded by
//	internal/otlpwire, reduced alike)
//	  internal/reduce: spans → one series.Batch of per-series deltas, each series under its
//	  key (internal/series); one pointer into the intake ring (internal/intake), which waits
//	  if it is full
//	the consumer goroutine: internal/aggregate (owns the series tables and resources)
//	  woken per WakeCount queued batches or by the flush ticker; Apply folds batches into the
//	  active series.DeltaBuffer; at the tick Swap trades it for the spare the flusher handed
//	  back
//	the flush goroutine: internal/flush
//	  cumulative totals, pmetric.Metrics, next.ConsumeMetrics, in chunks
//
// Every stage reads the configuration through one series.Plan, derived here (plan.go); the
// connector's own telemetry is internal/telemetry.
type connectorImp struct {
	plan *series.Plan
	// The pipeline stage is the component: Start, Shutdown, ConsumeTraces, Capabilities.
	*pipeline.Stage[series.Batch, *series.DeltaBuffer]

	pipe    *intake.Pipe[series.Batch]
	reducer *reduce.Reducer
	// names renames span names (span_name; nil when off) and hints size the batches: both
	// shared by the producers, read by the aggregator and the telemetry.
	names *reduce.Namer
	hints *intake.SizeHints
	agg   *aggregate.Aggregator
	fl    *flush.Flusher
	tel   *telemetry.Telemetry
}

var _ consumer.Traces = (*connectorImp)(nil)

func newConnector(set component.TelemetrySettings, cfg *Config, next consumer.Metrics, d deps, instanceID string) (*connectorImp, error) {
	p, err := newPlan(cfg, readGates(), instanceID)
	if err != nil {
		return nil, err
	}
	filter, err := spanfilter.Compile("filter_policies", cfg.FilterPolicies)
	if err != nil {
		return nil, err
	}
	// The free list holds up to ring_memory_mib of batches as well: beyond, the GC takes them.
	pipe := intake.NewPipe(p.RingSize, p.RingBytes, series.Batches)
	var names *reduce.Namer
	if p.WithName { // with span.name excluded there is no name to rewrite
		names = namerOf(cfg.SpanName)
	}
	tel, err := telemetry.New(set, pipe.Queue, p, names.Renames())
	if err != nil {
		return nil, err
	}
	hints := intake.NewSizeHints(series.NumHints, series.HintLimit)
	red := reduce.New(p, d.keyHash, names, reduce.NewWeighting(cfg.Sampling.Weighted, cfg.multiplierAttribute()),
		reduce.NewFiltering(filter, &tel.FilteredSpans), hints)
	c := &connectorImp{
		plan:    p,
		pipe:    pipe,
		reducer: red,
		names:   names,
		hints:   hints,
		tel:     tel,
	}
	c.agg = aggregate.New(p, d.keyHash, d.clock, hints, pipe.Queue.Cap(), tel, names.Clusterer())
	c.fl = flush.New(p, next, set.Logger, tel, d.chunkPoints)
	clock := d.clock
	c.Stage = pipeline.New(pipeline.Settings[series.Batch, *series.DeltaBuffer]{
		Pipe: pipe,
		Reduce: func(b *series.Batch, td ptrace.Traces) {
			b.TS = clock.Now().UnixNano()
			red.Reduce(b, td)
		},
		ReduceWire: func(b *series.Batch, d *otlpwire.Decoder) {
			b.TS = clock.Now().UnixNano()
			red.ReduceWire(b, d)
		},
		Consumer:        c.agg,
		Flusher:         c.fl,
		Spare:           series.NewDeltaBuffer(len(p.Families)),
		Clock:           clock,
		FlushInterval:   p.FlushInterval,
		ErrShutdown:     errShutdown,
		Refused:         &tel.RefusedSpans,
		RefusedRequests: &tel.RefusedRequests,
		Postponed:       &tel.FlushesSkipped,
		Closed:          tel.Shutdown,
	})
	if cfg.CapSelection.SketchSize != 0 {
		set.Logger.Warn("cap_selection.sketch_size is ignored: refused series are counted exactly, within cap_selection.memory_mib")
	}
	if cfg.DimensionsCacheSize != 0 {
		set.Logger.Warn("dimensions_cache_size is deprecated and ignored; use aggregation_cardinality_limit or max_series")
	}
	return c, nil
}

// deps are what the connector is built with besides its configuration. The factory hands in
// the real ones; tests build the connector with a fake clock, smaller chunks or a colliding
// hash instead of changing fields after construction.
type deps struct {
	clock       clockwork.Clock     // the context's clock (clockwork.FromContext), else the real one
	chunkPoints int                 // data points per ConsumeMetrics call: chunkDataPoints
	keyHash     func([]byte) uint64 // hash of series identities and resource keys: hash.Sum64
}
