package cachedprom

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/metadata"
)

// gaugeBatch builds one gauge metric with a data point per label value.
func gaugeBatch(name string, ts time.Time, values ...string) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "svc")
	rm.Resource().Attributes().PutStr("service.instance.id", "i-1")
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName(name)
	g := m.SetEmptyGauge()
	for i, v := range values {
		dp := g.DataPoints().AppendEmpty()
		dp.Attributes().PutStr("k", v)
		dp.SetTimestamp(pcommon.NewTimestampFromTime(ts))
		dp.SetDoubleValue(float64(i + 1))
	}
	return md
}

func deltaCounter(v float64, start, end time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("hits")
	s := m.SetEmptySum()
	s.SetIsMonotonic(true)
	s.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	dp := s.DataPoints().AppendEmpty()
	dp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	dp.SetTimestamp(pcommon.NewTimestampFromTime(end))
	dp.SetDoubleValue(v)
	return md
}

func body(t *testing.T, e *cachedExporter) string {
	t.Helper()
	e.renderNow()
	return textOf(t, e.snapshot.Load())
}

func TestDeltaSumsAccumulate(t *testing.T) {
	e, _ := startOurs(t, func(c *Config) { c.RenderInterval = time.Hour })
	ctx := context.Background()
	t0 := testBase
	require.NoError(t, e.ConsumeMetrics(ctx, deltaCounter(2, t0, t0.Add(time.Second))))
	require.NoError(t, e.ConsumeMetrics(ctx, deltaCounter(3, t0.Add(time.Second), t0.Add(2*time.Second))))
	assert.Contains(t, body(t, e), "hits_total{otel_scope_name=\"\",otel_scope_schema_url=\"\",otel_scope_version=\"\"} 5\n")
	// An older point is ignored.
	require.NoError(t, e.ConsumeMetrics(ctx, deltaCounter(100, t0, t0.Add(time.Second))))
	assert.Contains(t, body(t, e), "} 5\n")
	// A delta that does not continue the previous one (a gap) restarts.
	require.NoError(t, e.ConsumeMetrics(ctx, deltaCounter(7, t0.Add(5*time.Second), t0.Add(6*time.Second))))
	assert.Contains(t, body(t, e), "} 7\n")
}

func TestNoRecordedValueDeletesSeries(t *testing.T) {
	e, _ := startOurs(t, func(c *Config) { c.RenderInterval = time.Hour })
	ctx := context.Background()
	require.NoError(t, e.ConsumeMetrics(ctx, gaugeBatch("temp", testBase, "a", "b")))
	require.Equal(t, 2, e.store.len())
	md := gaugeBatch("temp", testBase.Add(time.Second), "a")
	md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().At(0).SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
	require.NoError(t, e.ConsumeMetrics(ctx, md))
	assert.Equal(t, 1, e.store.len())
	assert.NotContains(t, body(t, e), `k="a"`)
}

func TestExpiryRunsWithoutScrapes(t *testing.T) {
	e, _ := startOurs(t, func(c *Config) {
		c.MetricExpiration = 100 * time.Millisecond
		c.RenderInterval = 10 * time.Millisecond
	})
	require.NoError(t, e.ConsumeMetrics(context.Background(), gaugeBatch("temp", testBase, "a", "b", "c")))
	require.Equal(t, 3, e.store.len())
	// Nobody scrapes; the timer alone must expire the series and publish a
	// snapshot without them (target_info included).
	require.Eventually(t, func() bool {
		s := e.snapshot.Load()
		return e.store.len() == 0 && s != nil && s.textLen == 0
	}, 5*time.Second, 10*time.Millisecond)
	assert.Empty(t, e.store.resources)
	assert.Empty(t, e.store.families)
}

func TestMaxSeriesDropsAndLogsOncePerInterval(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	cfg := createDefaultConfig().(*Config)
	cfg.NetAddr.Endpoint = freeEndpoint(t)
	cfg.MaxSeries = 3
	cfg.RenderInterval = 50 * time.Millisecond
	set := exportertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set.TelemetrySettings = tel.NewTelemetrySettings()
	set.Logger = zap.New(core)
	e, err := newExporter(cfg, set)
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, e.Shutdown(context.Background())) })

	for i := 0; i < 5; i++ { // 5 batches within one interval, 2 dropped points each
		require.NoError(t, e.ConsumeMetrics(context.Background(), gaugeBatch("temp", testBase, "a", "b", "c", "d", "e")))
	}
	assert.Equal(t, 3, e.store.len())
	require.Eventually(t, func() bool { return logs.Len() > 0 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(3 * cfg.RenderInterval)
	entries := logs.FilterMessageSnippet("max_series").All()
	require.Len(t, entries, 1, "one log line per interval, not one per data point")
	assert.Equal(t, int64(10), entries[0].ContextMap()["dropped_data_points"])

	m, err := tel.GetMetric("otelcol_exporter_cachedprom_dropped_over_cap")
	require.NoError(t, err)
	assert.Equal(t, int64(10), m.Data.(metricdata.Sum[int64]).DataPoints[0].Value)
	e.renderNow()
	m, err = tel.GetMetric("otelcol_exporter_cachedprom_series")
	require.NoError(t, err)
	assert.Equal(t, int64(3), m.Data.(metricdata.Gauge[int64]).DataPoints[0].Value)
	_, err = tel.GetMetric("otelcol_exporter_cachedprom_render_duration")
	require.NoError(t, err)
	_, err = tel.GetMetric("otelcol_exporter_cachedprom_snapshot_bytes")
	require.NoError(t, err)
}

func TestRefusedLikeStock(t *testing.T) {
	e, _ := startOurs(t, func(c *Config) { c.RenderInterval = time.Hour })
	ctx := context.Background()

	// "a.b" and "a_b" become the same label: the second series is refused
	// (client_golang: "collected before with the same name and label values").
	md := pmetric.NewMetrics()
	ms := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics()
	m := ms.AppendEmpty()
	m.SetName("dup")
	g := m.SetEmptyGauge()
	dp := g.DataPoints().AppendEmpty()
	dp.Attributes().PutStr("a.b", "x")
	dp.SetDoubleValue(1)
	dp = g.DataPoints().AppendEmpty()
	dp.Attributes().PutStr("a_b", "x")
	dp.SetDoubleValue(2)
	// Same name, another type: refused, the first type stays.
	m = ms.AppendEmpty()
	m.SetName("dup")
	m.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	m.Histogram().DataPoints().AppendEmpty().SetCount(1)
	// A value that is not UTF-8 is refused.
	m = ms.AppendEmpty()
	m.SetName("bad")
	dp = m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.Attributes().PutStr("v", "\xff\xfe")
	require.NoError(t, e.ConsumeMetrics(ctx, md))

	out := body(t, e)
	assert.Equal(t, 1, strings.Count(out, "\ndup{"), out)
	assert.Contains(t, out, "# TYPE dup gauge")
	assert.NotContains(t, out, "bad")
}
