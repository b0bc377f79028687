package tracemetrics

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// aggregated_spans counts what the aggregator folded into the store — the spans of resources
// with service.name, the others being skipped — so that an operator can set it against the
// spans the receivers accepted; flushes counts completed flushes, Shutdown's included.
func TestTelemetryCountsAggregatedSpansAndFlushes(t *testing.T) {
	c, sink, clock, tel := startOurs(t, map[string]any{"metrics_flush_interval": 10 * time.Second}, true)
	counter := func(name, unit string) int64 {
		m, err := tel.GetMetric(name)
		require.NoError(t, err)
		require.Equal(t, unit, m.Unit, name)
		sum := m.Data.(metricdata.Sum[int64])
		require.True(t, sum.IsMonotonic, name)
		return sum.DataPoints[0].Value
	}
	r := newRand(4)
	var want, all int64
	consume := func() {
		for i := 0; i < 30; i++ {
			td := genTraces(r, 50, genOptions{services: 3, names: 4, bad: true})
			want += countedSpans(td)
			all += int64(td.SpanCount())
			require.NoError(t, c.ConsumeTraces(context.Background(), td))
		}
	}
	consume()
	require.Less(t, want, all, "some resources have no service.name")
	c.settle(t)
	require.Equal(t, want, counter("otelcol_connector_tracemetrics_aggregated_spans", "{spans}"))
	require.Zero(t, counter("otelcol_connector_tracemetrics_flushes", "{flushes}"))

	consume()
	md := flushOnce(t, c, sink, clock, 10*time.Second)
	require.Equal(t, want, sumUp(md).durations, "every aggregated span is in the flush")
	require.Equal(t, want, counter("otelcol_connector_tracemetrics_aggregated_spans", "{spans}"))
	require.EqualValues(t, 1, counter("otelcol_connector_tracemetrics_flushes", "{flushes}"))

	require.NoError(t, c.Shutdown(context.Background()))
	require.EqualValues(t, 2, c.tel.Flushes.Load(), "Shutdown's final flush")
	require.Equal(t, want, c.tel.AggregatedSpans.Load())
}
