package cachedprom

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/metadata"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
)

// redBatch builds spanmetrics-shaped output for the given span names: a
// calls counter and a duration histogram per name, delta or cumulative,
// each name counting calls spans in [start, end].
func redBatch(delta bool, start, end time.Time, calls uint64, spans ...string) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "svc")
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("tracemetrics")
	temporality := pmetric.AggregationTemporalityCumulative
	if delta {
		temporality = pmetric.AggregationTemporalityDelta
	}
	c := sm.Metrics().AppendEmpty()
	c.SetName("traces.span.metrics.calls")
	cs := c.SetEmptySum()
	cs.SetIsMonotonic(true)
	cs.SetAggregationTemporality(temporality)
	d := sm.Metrics().AppendEmpty()
	d.SetName("traces.span.metrics.duration")
	d.SetUnit("ms")
	dh := d.SetEmptyHistogram()
	dh.SetAggregationTemporality(temporality)
	for _, span := range spans {
		dp := cs.DataPoints().AppendEmpty()
		dp.Attributes().PutStr("span.name", span)
		dp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		dp.SetTimestamp(pcommon.NewTimestampFromTime(end))
		dp.SetIntValue(int64(calls))
		hp := dh.DataPoints().AppendEmpty()
		hp.Attributes().PutStr("span.name", span)
		hp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		hp.SetTimestamp(pcommon.NewTimestampFromTime(end))
		hp.ExplicitBounds().FromRaw([]float64{2, 6})
		hp.BucketCounts().FromRaw([]uint64{calls, 0, 0})
		hp.SetCount(calls)
		hp.SetSum(float64(calls))
	}
	return md
}

func newObservedExporter(t *testing.T, mutate func(*Config)) (*cachedExporter, *observer.ObservedLogs, *componenttest.Telemetry) {
	core, logs := observer.New(zapcore.WarnLevel)
	cfg := createDefaultConfig().(*Config)
	cfg.NetAddr.Endpoint = promtest.FreeEndpoint(t)
	cfg.RenderInterval = 50 * time.Millisecond
	mutate(cfg)
	set := exportertest.NewNopSettings(metadata.Type)
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set.TelemetrySettings = tel.NewTelemetrySettings()
	set.Logger = zap.New(core)
	e, err := newExporter(cfg, set, clockwork.NewRealClock())
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, e.Shutdown(context.Background())) })
	return e, logs, tel
}

func counterValue(t *testing.T, tel *componenttest.Telemetry, name, reason string) int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	if err != nil {
		return 0 // not recorded yet
	}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		if v, ok := dp.Attributes.Value(attribute.Key("reason")); ok && v.AsString() == reason {
			return dp.Value
		}
	}
	return 0
}

// TestMaxSeriesOverflowKeepsTotals: max_series counts label sets (one per
// RED series, shared by calls and duration); beyond it, points go to the
// family's overflow series, so totals stay exact, for delta and cumulative
// input.
func TestMaxSeriesOverflowKeepsTotals(t *testing.T) {
	for _, delta := range []bool{true, false} {
		name := "cumulative"
		if delta {
			name = "delta"
		}
		t.Run(name, func(t *testing.T) {
			e, logs, tel := newObservedExporter(t, func(c *Config) { c.MaxSeries = 3 })
			ctx := context.Background()
			t0 := promtest.TestBase
			spans := []string{"a", "b", "c", "d", "e"}
			for i := 1; i <= 4; i++ { // 4 flushes of 2 spans per name
				start := t0.Add(time.Duration(i-1) * time.Second)
				calls := uint64(2)
				if !delta {
					start, calls = t0, uint64(2*i)
				}
				require.NoError(t, e.ConsumeMetrics(ctx, redBatch(delta, start, t0.Add(time.Duration(i)*time.Second), calls, spans...)))
			}
			// Three label sets, each shared by calls and duration, plus the
			// overflow label set.
			assert.Equal(t, 4, e.store.Sizes().LabelSets)
			out := body(t, e)
			assert.Equal(t, float64(5*8), promtest.SumSamples(t, out, "traces_span_metrics_calls_total{"), out)
			assert.Equal(t, float64(5*8), promtest.SumSamples(t, out, "traces_span_metrics_duration_milliseconds_count{"), out)
			assert.Contains(t, out, `traces_span_metrics_calls_total{otel_metric_overflow="true"} 16`)
			assert.Contains(t, out, `traces_span_metrics_duration_milliseconds_count{otel_metric_overflow="true"} 16`)

			require.Eventually(t, func() bool {
				return counterValue(t, tel, "otelcol_exporter_cachedprom_adjusted_points", "overflow") == 4*2*2
			}, 5*time.Second, 10*time.Millisecond)
			// The counter is added to before the render that shows the overflow series,
			// the log line at most once per interval: it may come a step later.
			require.Eventually(t, func() bool {
				return logs.FilterMessageSnippet("max_series").Len() > 0
			}, 5*time.Second, 10*time.Millisecond)
			entries := logs.FilterMessageSnippet("max_series").All()
			assert.LessOrEqual(t, len(entries), 2, "one log line per interval, not one per data point")
		})
	}
}

// TestOverflowCountedBeforeItIsServed: the render that first shows an
// overflow series is preceded by the telemetry counting the points in it,
// even when the once-per-interval log line is not due yet, so a client that
// sees the overflow series and then reads own telemetry never finds 0.
func TestOverflowCountedBeforeItIsServed(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.MaxSeries = 2
	clock := clockwork.NewFakeClockAt(promtest.TestBase)
	set := exportertest.NewNopSettings(metadata.Type)
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set.TelemetrySettings = tel.NewTelemetrySettings()
	e, err := newExporter(cfg, set, clock)
	require.NoError(t, err)
	st := e.newSchedule(clock.Now())
	e.step(clock.Now(), st) // the log line of this interval is written
	require.NoError(t, e.ConsumeMetrics(context.Background(), redBatch(true, promtest.TestBase, promtest.TestBase.Add(time.Second), 3, "a", "b", "c")))
	clock.Advance(e.renderSettle)
	e.step(clock.Now(), st)
	require.Less(t, clock.Now().Sub(st.lastLog), cfg.RenderInterval, "the next log line is not due")
	require.Contains(t, textOf(t, hold(t, e)), `traces_span_metrics_calls_total{otel_metric_overflow="true"} 3`)
	assert.Equal(t, int64(2), counterValue(t, tel, "otelcol_exporter_cachedprom_adjusted_points", "overflow"),
		"calls and duration of span c")
}

// TestTypedAttributesMerge: two OTLP series differing only in an attribute's
// type (int 200, string "200") render to one Prometheus series, which must
// count both.
func TestTypedAttributesMerge(t *testing.T) {
	build := func(delta bool, v int64, end time.Time) pmetric.Metrics {
		md := pmetric.NewMetrics()
		m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName("requests")
		s := m.SetEmptySum()
		s.SetIsMonotonic(true)
		s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		start := promtest.TestBase
		if delta {
			s.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
			start = end.Add(-time.Second)
		}
		a := s.DataPoints().AppendEmpty()
		a.Attributes().PutInt("code", 200)
		a.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		a.SetTimestamp(pcommon.NewTimestampFromTime(end))
		a.SetIntValue(v)
		b := s.DataPoints().AppendEmpty()
		b.Attributes().PutStr("code", "200")
		b.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		b.SetTimestamp(pcommon.NewTimestampFromTime(end))
		b.SetIntValue(10 * v)
		return md
	}
	for _, delta := range []bool{true, false} {
		e, _, tel := newObservedExporter(t, func(c *Config) { c.RenderInterval = 10 * time.Millisecond })
		ctx := context.Background()
		require.NoError(t, e.ConsumeMetrics(ctx, build(delta, 1, promtest.TestBase.Add(time.Second))))
		require.NoError(t, e.ConsumeMetrics(ctx, build(delta, 2, promtest.TestBase.Add(2*time.Second))))
		want := "22" // cumulative: 2 + 20
		if delta {
			want = "33" // 1 + 10 + 2 + 20
		}
		out := body(t, e)
		assert.Equal(t, 1, strings.Count(out, "\nrequests_total{"), out)
		assert.Contains(t, out, `requests_total{code="200",otel_scope_name="",otel_scope_schema_url="",otel_scope_version=""} `+want+"\n", "delta=%v", delta)
		require.Eventually(t, func() bool {
			// Both temporalities: from the second writer's first point
			// on, both writers' points (3); each is then checked against
			// its own writer's last one.
			return counterValue(t, tel, "otelcol_exporter_cachedprom_adjusted_points", "merged") == 3
		}, 5*time.Second, 10*time.Millisecond)
	}
}

// TestLabelCollisionsResolved: what client_golang (hence the stock
// exporter) refuses is repaired deterministically and counted.
func TestLabelCollisionsResolved(t *testing.T) {
	e, _, tel := newObservedExporter(t, func(c *Config) {
		c.RenderInterval = 10 * time.Millisecond
		c.ConstLabels = map[string]string{"job": "from-config", "region": "eu"}
	})
	ctx := context.Background()
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "svc")
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	m := ms.AppendEmpty()
	m.SetName("dup")
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	// Inserted in the other order: the result must not depend on it.
	dp.Attributes().PutStr("http_method", "b")
	dp.Attributes().PutStr("http.method", "a")
	dp.SetDoubleValue(1)
	m = ms.AppendEmpty()
	m.SetName("bad")
	dp = m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.Attributes().PutStr("v", "ok\xff")
	dp.SetDoubleValue(2)
	// Same name, another type: dropped, the first type stays.
	m = ms.AppendEmpty()
	m.SetName("dup")
	m.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	m.Histogram().DataPoints().AppendEmpty().SetCount(1)
	require.NoError(t, e.ConsumeMetrics(ctx, md))

	out := body(t, e)
	assert.Contains(t, out, `dup{http_method="a;b",job="svc",otel_scope_name="",otel_scope_schema_url="",otel_scope_version="",region="eu"} 1`)
	assert.Contains(t, out, `bad{job="svc",otel_scope_name="",otel_scope_schema_url="",otel_scope_version="",region="eu",v="ok`+"\uFFFD"+`"} 2`)
	assert.Contains(t, out, "# TYPE dup gauge")
	require.Eventually(t, func() bool {
		return counterValue(t, tel, "otelcol_exporter_cachedprom_dropped_points", "type_conflict") == 1
	}, 5*time.Second, 10*time.Millisecond)
	const adjusted = "otelcol_exporter_cachedprom_adjusted_points"
	assert.Equal(t, int64(1), counterValue(t, tel, adjusted, "colliding_labels"))
	assert.Equal(t, int64(1), counterValue(t, tel, adjusted, "invalid_utf8"))
	assert.Equal(t, int64(2), counterValue(t, tel, adjusted, "shadowed_const_label"))
}

// TestSampleNameCollisionsHidden: a gauge x_count beside a histogram x, or
// a metric named target_info beside the generated one, would give duplicate
// samples; the histogram and the generated target_info keep the names.
func TestSampleNameCollisionsHidden(t *testing.T) {
	for _, order := range []string{"gauge first", "histogram first"} {
		e, _ := startOurs(t, func(c *Config) { c.RenderInterval = time.Hour })
		md := pmetric.NewMetrics()
		rm := md.ResourceMetrics().AppendEmpty()
		rm.Resource().Attributes().PutStr("service.name", "svc")
		rm.Resource().Attributes().PutStr("service.instance.id", "i1")
		ms := rm.ScopeMetrics().AppendEmpty().Metrics()
		gauge := func() {
			g := ms.AppendEmpty()
			g.SetName("x_count")
			g.SetEmptyGauge().DataPoints().AppendEmpty().SetDoubleValue(5)
			ti := ms.AppendEmpty()
			ti.SetName("target_info")
			ti.SetEmptyGauge().DataPoints().AppendEmpty().SetDoubleValue(9)
		}
		hist := func() {
			h := ms.AppendEmpty()
			h.SetName("x")
			h.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			h.Histogram().DataPoints().AppendEmpty().SetCount(1)
		}
		if order == "gauge first" {
			gauge()
			hist()
		} else {
			hist()
			gauge()
		}
		require.NoError(t, e.ConsumeMetrics(context.Background(), md))
		e.renderNow()
		snap := hold(t, e)
		out := textOf(t, snap)
		assert.Equal(t, 1, strings.Count(out, "\nx_count{"), "%s:\n%s", order, out)
		assert.Contains(t, out, "x_count{instance=\"i1\",job=\"svc\",otel_scope_name=\"\",otel_scope_schema_url=\"\",otel_scope_version=\"\"} 1\n")
		assert.Equal(t, 1, strings.Count(out, "target_info{"), out)
		assert.NotContains(t, out, " 9\n")
		assert.Equal(t, 2, snap.Hidden())
		promtest.ParseText(t, []byte(out))
	}
}
