package cachedprom

import (
	"context"
	"testing"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/metadatatest"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"
)

// The names users scrape (README, "Own telemetry"; deploy/'s dashboard and alerting rules and
// testbed/e2e read them with the Prometheus suffixes: _total, _seconds): a key renamed in
// metadata.yaml changes the generated asserts too, so they are spelled out here.
var ownMetricNames = []string{
	"otelcol_exporter_cachedprom_series",
	"otelcol_exporter_cachedprom_label_sets",
	"otelcol_exporter_cachedprom_hidden_series",
	"otelcol_exporter_cachedprom_render_duration",
	"otelcol_exporter_cachedprom_snapshot_bytes",
	"otelcol_exporter_cachedprom_scrapes",
	"otelcol_exporter_cachedprom_scrapes_refused",
	"otelcol_exporter_cachedprom_scrapes_paced",
	"otelcol_exporter_cachedprom_render_spare_waits",
	"otelcol_exporter_cachedprom_adjusted_points",
	"otelcol_exporter_cachedprom_dropped_points",
}

// telemetryBatch holds one point of each kind the test counts: two labels equal after
// sanitizing (adjusted, colliding_labels), a label value that is not UTF-8 (adjusted,
// invalid_utf8), a name used with a second type (dropped, type_conflict), and a gauge x_count
// beside a histogram x (one series hidden).
func telemetryBatch() pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "svc")
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()

	m := ms.AppendEmpty()
	m.SetName("dup")
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.Attributes().PutStr("http.method", "a")
	dp.Attributes().PutStr("http_method", "b")
	dp.SetDoubleValue(1)

	m = ms.AppendEmpty()
	m.SetName("bad")
	dp = m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.Attributes().PutStr("v", "ok\xff")
	dp.SetDoubleValue(2)

	m = ms.AppendEmpty()
	m.SetName("dup")
	m.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	m.Histogram().DataPoints().AppendEmpty().SetCount(1)

	m = ms.AppendEmpty()
	m.SetName("x_count")
	m.SetEmptyGauge().DataPoints().AppendEmpty().SetDoubleValue(5)
	m = ms.AppendEmpty()
	m.SetName("x")
	m.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	m.Histogram().DataPoints().AppendEmpty().SetCount(1)
	return md
}

// TestOwnTelemetry drives ingest and two renders, and the atomics the handler and the render
// loop add to (server_test.go and spare_test.go check when they do), and reads every
// instrument back with its name, unit, type and attributes.
func TestOwnTelemetry(t *testing.T) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	clock := clockwork.NewFakeClockAt(promtest.TestBase)
	e, err := newExporter(createDefaultConfig().(*Config), metadatatest.NewSettings(tt), clock)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Shutdown(context.Background())) })

	st := e.newSchedule(clock.Now())
	require.NoError(t, e.ConsumeMetrics(context.Background(), telemetryBatch()))
	e.countEvents(st)
	e.renderNow()
	e.renderNow()
	snap := hold(t, e)
	require.Equal(t, 1, snap.Hidden(), "x_count is hidden behind histogram x")
	e.telemetry.scrapes.Add(7)
	e.telemetry.scrapesRefused.Add(3)
	e.telemetry.scrapesPaced.Add(2)
	e.telemetry.spareWaits[spareReused].Add(4)
	e.telemetry.spareWaits[spareFresh].Add(1)

	for _, name := range ownMetricNames {
		_, err := tt.GetMetric(name)
		require.NoError(t, err, name)
	}
	ignore := metricdatatest.IgnoreTimestamp()
	point := func(v int) []metricdata.DataPoint[int64] { return []metricdata.DataPoint[int64]{{Value: int64(v)}} }
	metadatatest.AssertEqualExporterCachedpromSeries(t, tt, point(snap.Series()), ignore)
	metadatatest.AssertEqualExporterCachedpromLabelSets(t, tt, point(e.store.Sizes().LabelSets), ignore)
	metadatatest.AssertEqualExporterCachedpromHiddenSeries(t, tt, point(1), ignore)
	metadatatest.AssertEqualExporterCachedpromSnapshotBytes(t, tt, point(snap.Size()), ignore)
	metadatatest.AssertEqualExporterCachedpromScrapes(t, tt, point(7), ignore)
	metadatatest.AssertEqualExporterCachedpromScrapesRefused(t, tt, point(3), ignore)
	metadatatest.AssertEqualExporterCachedpromScrapesPaced(t, tt, point(2), ignore)

	attr := func(k, v string) attribute.Set { return attribute.NewSet(attribute.String(k, v)) }
	metadatatest.AssertEqualExporterCachedpromRenderSpareWaits(t, tt, []metricdata.DataPoint[int64]{
		{Attributes: attr("outcome", "spare"), Value: 4},
		{Attributes: attr("outcome", "fresh"), Value: 1},
	}, ignore)
	metadatatest.AssertEqualExporterCachedpromAdjustedPoints(t, tt, []metricdata.DataPoint[int64]{
		{Attributes: attr("reason", "colliding_labels"), Value: 1},
		{Attributes: attr("reason", "invalid_utf8"), Value: 1},
	}, ignore)
	metadatatest.AssertEqualExporterCachedpromDroppedPoints(t, tt, []metricdata.DataPoint[int64]{
		{Attributes: attr("reason", "type_conflict"), Value: 1},
	}, ignore)
	// The durations are the machine's; their count is the renders'.
	metadatatest.AssertEqualExporterCachedpromRenderDuration(t, tt, []metricdata.HistogramDataPoint[float64]{{}},
		ignore, metricdatatest.IgnoreValue())
	m, err := tt.GetMetric("otelcol_exporter_cachedprom_render_duration")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), m.Data.(metricdata.Histogram[float64]).DataPoints[0].Count)

	// Shutdown unregisters the callbacks: the asynchronous instruments report nothing after it.
	require.NoError(t, e.Shutdown(context.Background()))
	_, err = tt.GetMetric("otelcol_exporter_cachedprom_series")
	require.Error(t, err)
}

// The reason values metadata.yaml documents (documentation.md) are the store's events, each
// under the counter it is added to.
func TestReasonsDocumentedAsCounted(t *testing.T) {
	cm, err := confmaptest.LoadConf("metadata.yaml")
	require.NoError(t, err)
	var adjusted, dropped []any
	for k := range store.NumEvents {
		if k.Dropped() {
			dropped = append(dropped, k.String())
		} else {
			adjusted = append(adjusted, k.String())
		}
	}
	assert.Equal(t, adjusted, cm.Get("attributes::adjusted_reason::enum"))
	assert.Equal(t, dropped, cm.Get("attributes::dropped_reason::enum"))
}
