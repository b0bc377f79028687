package latespans

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// collect registers cb for one observable counter and reads it once, as point attributes
// (encoded) to values.
func collect(t *testing.T, cb metric.Int64Callback) map[string]int64 {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { require.NoError(t, mp.Shutdown(context.Background())) })
	_, err := mp.Meter("test").Int64ObservableCounter("c", metric.WithInt64Callback(cb))
	require.NoError(t, err)
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	got := map[string]int64{}
	for _, dp := range rm.ScopeMetrics[0].Metrics[0].Data.(metricdata.Sum[int64]).DataPoints {
		got[dp.Attributes.Encoded(attribute.DefaultEncoder())] = dp.Value
	}
	return got
}

// Both directions have a point from 0, with the connector's own attributes beside direction.
func TestSpansCallback(t *testing.T) {
	var tot Totals
	require.Equal(t, map[string]int64{"direction=late": 0, "direction=early": 0}, collect(t, tot.SpansCallback()))

	tot.Add(&Counts{Spans: [2]int64{Late: 3, Early: 5}})
	tot.Add(&Counts{Spans: [2]int64{Late: 1}})
	require.Equal(t, map[string]int64{"direction=late": 4, "direction=early": 5}, collect(t, tot.SpansCallback()))
	for m, name := range map[Mode]string{CountNow: "counted_now", Drop: "dropped", Separate: "separate"} {
		require.Equal(t, map[string]int64{
			"direction=late,outcome=" + name:  4,
			"direction=early,outcome=" + name: 5,
		}, collect(t, tot.SpansCallback(Outcome(m))))
	}
}

// The lag is observed as a histogram's buckets: cumulative, one point per le, +Inf the total.
func TestLagCallback(t *testing.T) {
	var tot Totals
	var c Counts
	for i := range c.Lag {
		c.Lag[i] = int64(i + 1)
	}
	tot.Add(&c)
	tot.Add(&Counts{Lag: [NumLagBuckets]int64{2: 10}})
	got := collect(t, tot.LagCallback())
	require.Len(t, got, NumLagBuckets)
	var cum int64
	for i, le := range lagLabels {
		cum += int64(i + 1)
		if i == 2 {
			cum += 10
		}
		require.Equal(t, cum, got["le="+le], le)
	}
	require.Equal(t, int64(NumLagBuckets*(NumLagBuckets+1)/2+10), got["le=+Inf"])
}
