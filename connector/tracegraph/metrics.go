package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-red/otelcol-red/connector/tracegraph/internal/metadata"
	"github.com/otelcol-red/otelcol-red/internal/intake"
	"github.com/otelcol-red/otelcol-red/internal/latespans"
	"github.com/otelcol-red/otelcol-red/internal/pipeline"
)

// telemetry is the connector's own telemetry. The hot paths only touch atomics; the OTel
// metric API is called from the observable callbacks at collection time and from the flush.
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
	filteredSpans  atomic.Int64 // spans filter_policies dropped, added by the producers
	flushes        atomic.Int64
	flushesSkipped atomic.Int64
	exportErrors   atomic.Int64
	// refusedRequests counts wire traces refused whole because their bytes were refused, by
	// reason (internal/pipeline).
	refusedRequests pipeline.Refusals
	// Requests counted with a dimension's value replaced by __cardinality_overflow__, by the
	// limit that replaced it (limits.go).
	labelOverflowRequests atomic.Int64
	edgeOverflowRequests  atomic.Int64
	// late_spans (internal/latespans): edge spans outside the slack by direction, every edge
	// span by end-time lag bucket, both added once per batch; edges recorded with a late half,
	// under the configured policy's outcome.
	late      latespans.Totals
	lateEdges atomic.Int64

	// builder holds the instruments of metadata.yaml, generated into internal/metadata.
	builder *metadata.TelemetryBuilder
}

func newTelemetry(set component.TelemetrySettings, q *intake.Queue[halfBatch], late latespans.Mode) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	t := &telemetry{builder: tb}
	// observe reads one value when the collector's own metrics are read.
	observe := func(v func() int64) metric.Int64Callback {
		return func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(v())
			return nil
		}
	}
	err = errors.Join(
		tb.RegisterConnectorTracegraphTotalEdgesCallback(observe(t.totalEdges.Load)),
		tb.RegisterConnectorTracegraphExpiredEdgesCallback(observe(t.expiredEdges.Load)),
		tb.RegisterConnectorTracegraphDroppedSpansCallback(observe(t.droppedSpans.Load)),
		tb.RegisterConnectorTracegraphEvictedEdgesCallback(observe(t.evictedEdges.Load)),
		tb.RegisterConnectorTracegraphPendingEdgesCallback(observe(t.pending.Load)),
		tb.RegisterConnectorTracegraphSeriesCallback(observe(t.series.Load)),
		tb.RegisterConnectorTracegraphReceivedSpansCallback(observe(t.receivedSpans.Load)),
		tb.RegisterConnectorTracegraphSpansWithoutServiceCallback(observe(t.noService.Load)),
		tb.RegisterConnectorTracegraphBackwardsSpansCallback(observe(t.backwards.Load)),
		tb.RegisterConnectorTracegraphInvalidSamplingWeightsCallback(observe(t.invalidWeights.Load)),
		tb.RegisterConnectorTracegraphFilteredSpansCallback(observe(t.filteredSpans.Load)),
		tb.RegisterConnectorTracegraphFlushesCallback(observe(t.flushes.Load)),
		tb.RegisterConnectorTracegraphFlushesSkippedCallback(observe(t.flushesSkipped.Load)),
		tb.RegisterConnectorTracegraphExportErrorsCallback(observe(t.exportErrors.Load)),
		tb.RegisterConnectorTracegraphRingDepthCallback(observe(func() int64 { return int64(q.Len()) })),
		tb.RegisterConnectorTracegraphRingFullWaitsCallback(observe(func() int64 { return int64(q.Stats().FullWaits) })),
		tb.RegisterConnectorTracegraphRefusedRequestsCallback(t.refusedRequests.Callback()),
		tb.RegisterConnectorTracegraphLabelOverflowRequestsCallback(observe(t.labelOverflowRequests.Load)),
		tb.RegisterConnectorTracegraphEdgeOverflowRequestsCallback(observe(t.edgeOverflowRequests.Load)),
		tb.RegisterConnectorTracegraphLateSpansCallback(t.late.SpansCallback()),
		tb.RegisterConnectorTracegraphLateEdgesCallback(t.lateEdgesCallback(late)),
		tb.RegisterConnectorTracegraphSpanEndLagCallback(t.late.LagCallback()),
	)
	if err != nil {
		tb.Shutdown()
		return nil, err
	}
	return t, nil
}

// lateEdgesCallback observes lateEdges under the outcome of the configured policy.
func (t *telemetry) lateEdgesCallback(mode latespans.Mode) metric.Int64Callback {
	set := metric.WithAttributeSet(attribute.NewSet(latespans.Outcome(mode)))
	return func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(t.lateEdges.Load(), set)
		return nil
	}
}

func (t *telemetry) recordFlush(d time.Duration) {
	t.builder.ConnectorTracegraphFlushDuration.Record(context.Background(), d.Seconds())
}

// shutdown unregisters the callbacks (once: the stage's Shutdown runs it once).
func (t *telemetry) shutdown() {
	t.builder.Shutdown()
}
