package telemetry

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/metadatatest"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/intake"
	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
)

// Every configured limit and span_name layer has its series from the start, at 0; a limit
// not configured, a layer off, has none. Nothing is read but the atomics and what the
// callbacks return.
func TestSeriesPerConfiguredLimitAndLayer(t *testing.T) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	var renamed int64 = 7
	tel, err := New(tt.NewTelemetrySettings(), intake.New[series.Batch](4), &series.Plan{MaxSeries: 10, ByTraffic: true},
		&Renames{Layers: []Layer{{Name: "rule", Renamed: func() int64 { return renamed }}}})
	require.NoError(t, err)
	t.Cleanup(tel.Shutdown)
	tel.OverflowSpans[series.GlobalOverflow].Add(3)
	tel.RecordFlush(time.Millisecond, 12)

	m, err := tt.GetMetric("otelcol_connector_tracemetrics_overflow_spans")
	require.NoError(t, err)
	dps := m.Data.(metricdata.Sum[int64]).DataPoints
	require.Len(t, dps, 1, "max_series only")
	require.EqualValues(t, 3, dps[0].Value)
	v, _ := dps[0].Attributes.Value("limit")
	require.Equal(t, "max_series", v.AsString())

	m, err = tt.GetMetric("otelcol_connector_tracemetrics_renamed_spans")
	require.NoError(t, err)
	dps = m.Data.(metricdata.Sum[int64]).DataPoints
	require.Len(t, dps, 1)
	require.EqualValues(t, 7, dps[0].Value)

	_, err = tt.GetMetric("otelcol_connector_tracemetrics_span_name_templates")
	require.Error(t, err, "no clustering: no templates gauge")
	m, err = tt.GetMetric("otelcol_connector_tracemetrics_flush_data_points")
	require.NoError(t, err)
	require.EqualValues(t, 12, m.Data.(metricdata.Histogram[int64]).DataPoints[0].Sum)
}

// The names users scrape (README, "Own telemetry"; configs/, deploy/ and testbed/ read them
// with the Prometheus suffixes): a key renamed in metadata.yaml changes the generated asserts
// too, so they are spelled out here.
var ownMetricNames = []string{
	"otelcol_connector_tracemetrics_series",
	"otelcol_connector_tracemetrics_ring_depth",
	"otelcol_connector_tracemetrics_aggregated_spans",
	"otelcol_connector_tracemetrics_overflow_spans",
	"otelcol_connector_tracemetrics_ring_full_waits",
	"otelcol_connector_tracemetrics_ring_memory",
	"otelcol_connector_tracemetrics_ring_memory_waits",
	"otelcol_connector_tracemetrics_ring_lost_offers",
	"otelcol_connector_tracemetrics_flushes",
	"otelcol_connector_tracemetrics_flushes_skipped",
	"otelcol_connector_tracemetrics_refused_spans",
	"otelcol_connector_tracemetrics_export_errors",
	"otelcol_connector_tracemetrics_renamed_spans",
	"otelcol_connector_tracemetrics_dry_run_renamed_spans",
	"otelcol_connector_tracemetrics_span_name_templates",
	"otelcol_connector_tracemetrics_series_demand",
	"otelcol_connector_tracemetrics_overflow_series",
	"otelcol_connector_tracemetrics_promoted_series",
	"otelcol_connector_tracemetrics_demoted_series",
	"otelcol_connector_tracemetrics_invalid_sampling_weights",
	"otelcol_connector_tracemetrics_flush_duration",
	"otelcol_connector_tracemetrics_flush_data_points",
	"otelcol_connector_tracemetrics_refused_requests",
	"otelcol_connector_tracemetrics_selection_memory",
	"otelcol_connector_tracemetrics_label_demand",
	"otelcol_connector_tracemetrics_label_overflow_values",
}

// TestOwnTelemetry configures every limit and layer, gives every atomic a value of its own and
// reads each instrument back by name, unit, type and attributes, so an atomic wired to the
// wrong instrument, or a limit to the wrong attribute, fails.
func TestOwnTelemetry(t *testing.T) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	q := intake.New[series.Batch](4)
	layer := func(v int64) func() int64 { return func() int64 { return v } }
	tel, err := New(metadatatest.NewSettings(tt).TelemetrySettings, q,
		&series.Plan{
			CardLimit: 5, MaxService: 10, MaxSeries: 20, ByTraffic: true, MaxPerLabel: 3,
			Layout: series.Layout{Families: []*series.Family{{Dims: []series.Dimension{{Name: "a"}, {Name: "b"}}}}},
		},
		&Renames{
			Layers: []Layer{
				{Name: "semantic_conventions", Renamed: layer(21)},
				{Name: "rule", Renamed: layer(22)},
				{Name: "clustering", Renamed: layer(23)},
			},
			Templates:  layer(24),
			DryRenamed: layer(25),
		})
	require.NoError(t, err)
	tel.SeriesLive.Add(1)
	tel.AggregatedSpans.Add(2)
	tel.Flushes.Add(3)
	tel.FlushesSkipped.Add(4)
	tel.RefusedSpans.Add(5)
	tel.ExportErrors.Add(6)
	tel.InvalidWeights.Add(7)
	for i := range tel.RefusedRequests {
		tel.RefusedRequests[i].Add(int64(30 + i))
	}
	tel.SelectionBytes.Add(40)
	tel.LabelOverflowSpans.Add(41)
	require.Len(t, tel.LabelDemand, 2, "labels a and b")
	for i := range tel.LabelDemand {
		tel.LabelDemand[i].Add(int64(50 + i))
		tel.LabelOverflowValues[i].Add(int64(60 + i))
	}
	for k := range series.OverflowKinds {
		tel.OverflowSpans[k].Add(100 + int64(k))
		tel.SeriesDemand[k].Add(200 + int64(k))
		tel.OverflowSeries[k].Add(300 + int64(k))
		tel.PromotedSeries[k].Add(400 + int64(k))
		tel.DemotedSeries[k].Add(500 + int64(k))
	}
	require.NoError(t, q.Put(context.Background(), &series.Batch{}))
	tel.RecordFlush(time.Millisecond, 8)
	tel.RecordFlush(time.Millisecond, 9)

	for _, name := range ownMetricNames {
		_, err := tt.GetMetric(name)
		require.NoError(t, err, name)
	}
	ignore := metricdatatest.IgnoreTimestamp()
	point := func(v int64) []metricdata.DataPoint[int64] { return []metricdata.DataPoint[int64]{{Value: v}} }
	attr := func(k, v string) attribute.Set { return attribute.NewSet(attribute.String(k, v)) }
	// byLimit is one point per configured limit, from base; caps only leaves
	// aggregation_cardinality_limit out (cap_selection re-ranks only the caps).
	byLimit := func(base int64, capsOnly bool) []metricdata.DataPoint[int64] {
		var dps []metricdata.DataPoint[int64]
		for k := range series.OverflowKinds {
			if series.OverflowLimits[k] == "" || capsOnly && k == series.LimitOverflow {
				continue // not a limit (no overflow), or not re-ranked
			}
			dps = append(dps, metricdata.DataPoint[int64]{Attributes: attr("limit", series.OverflowLimits[k]), Value: base + int64(k)})
		}
		return dps
	}
	metadatatest.AssertEqualConnectorTracemetricsSeries(t, tt, point(1), ignore)
	metadatatest.AssertEqualConnectorTracemetricsAggregatedSpans(t, tt, point(2), ignore)
	metadatatest.AssertEqualConnectorTracemetricsFlushes(t, tt, point(3), ignore)
	metadatatest.AssertEqualConnectorTracemetricsFlushesSkipped(t, tt, point(4), ignore)
	metadatatest.AssertEqualConnectorTracemetricsRefusedSpans(t, tt, point(5), ignore)
	metadatatest.AssertEqualConnectorTracemetricsExportErrors(t, tt, point(6), ignore)
	metadatatest.AssertEqualConnectorTracemetricsInvalidSamplingWeights(t, tt, point(7), ignore)
	metadatatest.AssertEqualConnectorTracemetricsRingDepth(t, tt, point(1), ignore)
	metadatatest.AssertEqualConnectorTracemetricsRingFullWaits(t, tt, point(0), ignore)
	metadatatest.AssertEqualConnectorTracemetricsRingMemory(t, tt, point(q.HeldBytes()), ignore)
	metadatatest.AssertEqualConnectorTracemetricsRingMemoryWaits(t, tt, point(0), ignore)
	metadatatest.AssertEqualConnectorTracemetricsRingLostOffers(t, tt, point(0), ignore)
	var refused []metricdata.DataPoint[int64]
	for i, reason := range otlpwire.RefusalNames {
		refused = append(refused, metricdata.DataPoint[int64]{Attributes: attr("reason", reason), Value: int64(30 + i)})
	}
	metadatatest.AssertEqualConnectorTracemetricsRefusedRequests(t, tt, refused, ignore)
	metadatatest.AssertEqualConnectorTracemetricsOverflowSpans(t, tt, append(byLimit(100, false),
		metricdata.DataPoint[int64]{Attributes: attr("limit", "max_cardinality_per_label"), Value: 41}), ignore)
	metadatatest.AssertEqualConnectorTracemetricsSelectionMemory(t, tt, point(40), ignore)
	byLabel := func(base int64) []metricdata.DataPoint[int64] {
		return []metricdata.DataPoint[int64]{
			{Attributes: attr("label", "a"), Value: base},
			{Attributes: attr("label", "b"), Value: base + 1},
		}
	}
	metadatatest.AssertEqualConnectorTracemetricsLabelDemand(t, tt, byLabel(50), ignore)
	metadatatest.AssertEqualConnectorTracemetricsLabelOverflowValues(t, tt, byLabel(60), ignore)
	metadatatest.AssertEqualConnectorTracemetricsSeriesDemand(t, tt, byLimit(200, false), ignore)
	metadatatest.AssertEqualConnectorTracemetricsOverflowSeries(t, tt, byLimit(300, false), ignore)
	metadatatest.AssertEqualConnectorTracemetricsPromotedSeries(t, tt, byLimit(400, true), ignore)
	metadatatest.AssertEqualConnectorTracemetricsDemotedSeries(t, tt, byLimit(500, true), ignore)
	metadatatest.AssertEqualConnectorTracemetricsRenamedSpans(t, tt, []metricdata.DataPoint[int64]{
		{Attributes: attr("layer", "semantic_conventions"), Value: 21},
		{Attributes: attr("layer", "rule"), Value: 22},
		{Attributes: attr("layer", "clustering"), Value: 23},
	}, ignore)
	metadatatest.AssertEqualConnectorTracemetricsSpanNameTemplates(t, tt, point(24), ignore)
	metadatatest.AssertEqualConnectorTracemetricsDryRunRenamedSpans(t, tt, point(25), ignore)
	// The durations are the machine's; their count is the flushes'.
	metadatatest.AssertEqualConnectorTracemetricsFlushDuration(t, tt, []metricdata.HistogramDataPoint[float64]{{}},
		ignore, metricdatatest.IgnoreValue())
	m, err := tt.GetMetric("otelcol_connector_tracemetrics_flush_data_points")
	require.NoError(t, err)
	require.EqualValues(t, 17, m.Data.(metricdata.Histogram[int64]).DataPoints[0].Sum)
	require.EqualValues(t, 2, m.Data.(metricdata.Histogram[int64]).DataPoints[0].Count)

	// Shutdown unregisters the callbacks: the asynchronous instruments report nothing after it.
	tel.Shutdown()
	_, err = tt.GetMetric("otelcol_connector_tracemetrics_series")
	require.Error(t, err)
}
