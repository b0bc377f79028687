package hotspotfilter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-red/otelcol-red/connector/hotspotfilter/internal/metadata"
)

func TestMetricsShape(t *testing.T) {
	h := newHarness(t, singleRule(Rule{Budget: 1, Burst: 1, KeepErrors: true}))
	created := h.clock.Now()
	h.consume(t, redisBatch("cart", 1, 3))
	h.clock.Advance(time.Second)
	require.NoError(t, h.filter.flush(t.Context()))
	md := h.emitted.AllMetrics()[0]

	require.Equal(t, 1, md.ResourceMetrics().Len())
	sm := md.ResourceMetrics().At(0).ScopeMetrics().At(0)
	assert.Equal(t, metadata.ScopeName, sm.Scope().Name())
	byName := map[string]pmetric.Metric{}
	for i := 0; i < sm.Metrics().Len(); i++ {
		byName[sm.Metrics().At(i).Name()] = sm.Metrics().At(i)
	}
	for _, name := range []string{metricKept, metricDropped} {
		m, ok := byName[name]
		require.True(t, ok, name)
		assert.Equal(t, "{span}", m.Unit())
		require.Equal(t, pmetric.MetricTypeSum, m.Type())
		assert.True(t, m.Sum().IsMonotonic())
		assert.Equal(t, pmetric.AggregationTemporalityCumulative, m.Sum().AggregationTemporality())
		dp := m.Sum().DataPoints().At(0)
		assert.Equal(t, pcommon.NewTimestampFromTime(created), dp.StartTimestamp(), "start is when the service was first seen")
		assert.Equal(t, pcommon.NewTimestampFromTime(created.Add(time.Second)), dp.Timestamp())
	}
	for _, name := range []string{metricHot, metricTracked} {
		m, ok := byName[name]
		require.True(t, ok, name)
		assert.Equal(t, "{service}", m.Unit())
		assert.Equal(t, pmetric.MetricTypeGauge, m.Type())
	}
	// The overflow entry has no series until it is used.
	for _, p := range points(md) {
		assert.False(t, p.overflow)
	}
}
