package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-red/otelcol-red/connector/tracegraph/internal/metadata"
	"github.com/otelcol-red/otelcol-red/internal/intake"
)

// telemetry is the connector's own telemetry. The hot paths only touch atomics; the OTel
// metric API is called from an observable callback at collection time and from the flush.
type telemetry struct {
	// servicegraph's three, under our prefix.
	totalEdges   atomic.Int64 // edges created: a first half stored, or a database call
	expiredEdges atomic.Int64 // waiting halves whose pair did not come (evicted ones included)
	droppedSpans atomic.Int64 // spans refused by ConsumeTraces (context done while the ring was full, or shut down)

	evictedEdges   atomic.Int64 // waiting halves expired early because store.max_items was reached
	pending        atomic.Int64
	series         atomic.Int64
	receivedSpans  atomic.Int64
	invalidWeights atomic.Int64
	noService      atomic.Int64 // spans of resources without service.name
	backwards      atomic.Int64 // spans of an edge ending before they start
	flushes        atomic.Int64
	flushesSkipped atomic.Int64
	exportErrors   atomic.Int64
	// Requests counted with a dimension's value replaced by __cardinality_overflow__, by the
	// limit that replaced it (limits.go).
	labelOverflowRequests atomic.Int64
	edgeOverflowRequests  atomic.Int64

	flushDuration metric.Float64Histogram
	reg           metric.Registration
}

func newTelemetry(set component.TelemetrySettings, q *intake.Queue[halfBatch]) (*telemetry, error) {
	t := &telemetry{}
	if set.MeterProvider == nil {
		return t, nil
	}
	m := set.MeterProvider.Meter(metadata.ScopeName)
	var errs []error
	var observables []metric.Observable
	type reading struct {
		o metric.Int64Observable
		v func() int64
	}
	var readings []reading
	add := func(o metric.Int64Observable, err error, v func() int64) {
		errs = append(errs, err)
		observables = append(observables, o)
		readings = append(readings, reading{o, v})
	}
	counter := func(name, desc, unit string, v func() int64) {
		c, err := m.Int64ObservableCounter("otelcol_connector_tracegraph_"+name, metric.WithDescription(desc), metric.WithUnit(unit))
		add(c, err, v)
	}
	gauge := func(name, desc, unit string, v func() int64) {
		g, err := m.Int64ObservableGauge("otelcol_connector_tracegraph_"+name, metric.WithDescription(desc), metric.WithUnit(unit))
		add(g, err, v)
	}
	counter("total_edges", "Edges created: a first half stored to wait for its pair, or a database call (servicegraph's total_edges).", "{edges}", t.totalEdges.Load)
	counter("expired_edges", "Half edges whose other span did not come within store.ttl, or that store.max_items evicted (servicegraph's expired_edges).", "{edges}", t.expiredEdges.Load)
	counter("dropped_spans", "Spans refused by ConsumeTraces: context done while the intake ring was full, or shut down.", "{spans}", t.droppedSpans.Load)
	counter("evicted_edges", "Half edges expired before their ttl to make room under store.max_items.", "{edges}", t.evictedEdges.Load)
	gauge("pending_edges", "Half edges waiting for their other span.", "{edges}", t.pending.Load)
	gauge("series", "Edge series held.", "{series}", t.series.Load)
	counter("received_spans", "Spans taken from the intake ring, edges or not.", "{spans}", t.receivedSpans.Load)
	counter("spans_without_service", "Spans of resources without service.name, which cannot name a node of the graph (skipped, as servicegraph skips them).", "{spans}", t.noService.Load)
	counter("backwards_spans", "Edge spans that end before they start; their latency counts 0.", "{spans}", t.backwards.Load)
	counter("invalid_sampling_weights", "Spans whose tracestate threshold (ot=th) was invalid and which counted 1.", "{spans}", t.invalidWeights.Load)
	counter("flushes", "Flushes handed to the next consumer (Shutdown's final flush included).", "{flushes}", t.flushes.Load)
	counter("flushes_skipped", "Flush ticks postponed because the previous flush was still being sent.", "{flushes}", t.flushesSkipped.Load)
	counter("export_errors", "Flushes the next consumer returned an error for.", "{flushes}", t.exportErrors.Load)
	counter("label_overflow_requests", "Requests counted with a client_<dim> or server_<dim> value replaced by __cardinality_overflow__: the label had max_cardinality_per_label values for that service.", "{requests}", t.labelOverflowRequests.Load)
	counter("edge_overflow_requests", "Requests counted in an edge's overflow series (every dimension __cardinality_overflow__): the client → server pair had max_series_per_edge series.", "{requests}", t.edgeOverflowRequests.Load)
	gauge("ring_depth", "Batches waiting in the intake ring.", "{batches}", func() int64 { return int64(q.Len()) })
	counter("ring_full_waits", "ConsumeTraces calls that found the intake ring full and waited.", "{calls}", func() int64 { return int64(q.Stats().FullWaits) })
	var err error
	t.flushDuration, err = m.Float64Histogram("otelcol_connector_tracegraph_flush_duration",
		metric.WithDescription("Time to build the metrics of one flush."), metric.WithUnit("s"))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	t.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, r := range readings {
			o.ObserveInt64(r.o, r.v())
		}
		return nil
	}, observables...)
	return t, err
}

func (t *telemetry) recordFlush(d time.Duration) {
	if t.flushDuration != nil {
		t.flushDuration.Record(context.Background(), d.Seconds())
	}
}

// shutdown unregisters the callback (once: the stage's Shutdown runs it once).
func (t *telemetry) shutdown() {
	if t.reg != nil {
		_ = t.reg.Unregister()
	}
}
