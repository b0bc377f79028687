package telemetry

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/intake"
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
