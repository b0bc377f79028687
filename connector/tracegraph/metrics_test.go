package tracegraph

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelcol-red/otelcol-red/connector/tracegraph/internal/metadatatest"
	"github.com/otelcol-red/otelcol-red/internal/intake"
	"github.com/otelcol-red/otelcol-red/internal/latespans"
	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
)

// The names users scrape (README, "Own telemetry"; configs/, deploy/ and testbed/e2e read them
// with the Prometheus suffixes): a key renamed in metadata.yaml changes the generated asserts
// too, so they are spelled out here.
var ownMetricNames = []string{
	"otelcol_connector_tracegraph_total_edges",
	"otelcol_connector_tracegraph_expired_edges",
	"otelcol_connector_tracegraph_dropped_spans",
	"otelcol_connector_tracegraph_evicted_edges",
	"otelcol_connector_tracegraph_pending_edges",
	"otelcol_connector_tracegraph_series",
	"otelcol_connector_tracegraph_received_spans",
	"otelcol_connector_tracegraph_spans_without_service",
	"otelcol_connector_tracegraph_backwards_spans",
	"otelcol_connector_tracegraph_invalid_sampling_weights",
	"otelcol_connector_tracegraph_flushes",
	"otelcol_connector_tracegraph_flushes_skipped",
	"otelcol_connector_tracegraph_export_errors",
	"otelcol_connector_tracegraph_ring_depth",
	"otelcol_connector_tracegraph_ring_full_waits",
	"otelcol_connector_tracegraph_flush_duration",
	"otelcol_connector_tracegraph_refused_requests",
	"otelcol_connector_tracegraph_label_overflow_requests",
	"otelcol_connector_tracegraph_edge_overflow_requests",
}

// TestOwnTelemetry gives every counter a value of its own and reads each instrument back by
// name, unit and type, so an atomic wired to the wrong instrument fails.
func TestOwnTelemetry(t *testing.T) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	q := intake.New[halfBatch](4)
	tel, err := newTelemetry(metadatatest.NewSettings(tt).TelemetrySettings, q, latespans.CountNow)
	require.NoError(t, err)

	tel.totalEdges.Add(1)
	tel.expiredEdges.Add(2)
	tel.droppedSpans.Add(3)
	tel.evictedEdges.Add(4)
	tel.pending.Add(5)
	tel.series.Add(6)
	tel.receivedSpans.Add(7)
	tel.noService.Add(8)
	tel.backwards.Add(9)
	tel.invalidWeights.Add(10)
	tel.flushes.Add(11)
	tel.flushesSkipped.Add(12)
	tel.exportErrors.Add(13)
	tel.labelOverflowRequests.Add(14)
	tel.edgeOverflowRequests.Add(15)
	for i := range tel.refusedRequests {
		tel.refusedRequests[i].Add(int64(20 + i))
	}
	require.NoError(t, q.Put(context.Background(), &halfBatch{}))
	tel.recordFlush(time.Millisecond)
	tel.recordFlush(2 * time.Millisecond)

	for _, name := range ownMetricNames {
		_, err := tt.GetMetric(name)
		require.NoError(t, err, name)
	}
	ignore := metricdatatest.IgnoreTimestamp()
	point := func(v int64) []metricdata.DataPoint[int64] { return []metricdata.DataPoint[int64]{{Value: v}} }
	metadatatest.AssertEqualConnectorTracegraphTotalEdges(t, tt, point(1), ignore)
	metadatatest.AssertEqualConnectorTracegraphExpiredEdges(t, tt, point(2), ignore)
	metadatatest.AssertEqualConnectorTracegraphDroppedSpans(t, tt, point(3), ignore)
	metadatatest.AssertEqualConnectorTracegraphEvictedEdges(t, tt, point(4), ignore)
	metadatatest.AssertEqualConnectorTracegraphPendingEdges(t, tt, point(5), ignore)
	metadatatest.AssertEqualConnectorTracegraphSeries(t, tt, point(6), ignore)
	metadatatest.AssertEqualConnectorTracegraphReceivedSpans(t, tt, point(7), ignore)
	metadatatest.AssertEqualConnectorTracegraphSpansWithoutService(t, tt, point(8), ignore)
	metadatatest.AssertEqualConnectorTracegraphBackwardsSpans(t, tt, point(9), ignore)
	metadatatest.AssertEqualConnectorTracegraphInvalidSamplingWeights(t, tt, point(10), ignore)
	metadatatest.AssertEqualConnectorTracegraphFlushes(t, tt, point(11), ignore)
	metadatatest.AssertEqualConnectorTracegraphFlushesSkipped(t, tt, point(12), ignore)
	metadatatest.AssertEqualConnectorTracegraphExportErrors(t, tt, point(13), ignore)
	metadatatest.AssertEqualConnectorTracegraphLabelOverflowRequests(t, tt, point(14), ignore)
	metadatatest.AssertEqualConnectorTracegraphEdgeOverflowRequests(t, tt, point(15), ignore)
	metadatatest.AssertEqualConnectorTracegraphRingDepth(t, tt, point(1), ignore)
	metadatatest.AssertEqualConnectorTracegraphRingFullWaits(t, tt, point(0), ignore)
	var refused []metricdata.DataPoint[int64]
	for i, reason := range otlpwire.RefusalNames {
		refused = append(refused, metricdata.DataPoint[int64]{
			Attributes: attribute.NewSet(attribute.String("reason", reason)), Value: int64(20 + i),
		})
	}
	metadatatest.AssertEqualConnectorTracegraphRefusedRequests(t, tt, refused, ignore)
	// The durations are the machine's; their count is the flushes'.
	metadatatest.AssertEqualConnectorTracegraphFlushDuration(t, tt, []metricdata.HistogramDataPoint[float64]{{}},
		ignore, metricdatatest.IgnoreValue())
	m, err := tt.GetMetric("otelcol_connector_tracegraph_flush_duration")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), m.Data.(metricdata.Histogram[float64]).DataPoints[0].Count)

	// shutdown unregisters the callbacks: the asynchronous instruments report nothing after it.
	tel.shutdown()
	_, err = tt.GetMetric("otelcol_connector_tracegraph_total_edges")
	require.Error(t, err)
}
