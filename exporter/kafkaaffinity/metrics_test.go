package kafkaaffinity

import (
	"context"
	"strings"
	"testing"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelcol-red/otelcol-red/exporter/kafkaaffinity/internal/metadatatest"
)

// The names users scrape (README, "Own telemetry"; testbed/e2e reads them with the Prometheus
// _total suffix): a key renamed in metadata.yaml changes the generated asserts too, so they are
// spelled out here.
var ownMetricNames = []string{
	"otelcol_exporter_kafkaaffinity_records",
	"otelcol_exporter_kafkaaffinity_spans",
	"otelcol_exporter_kafkaaffinity_fallback_spans",
	"otelcol_exporter_kafkaaffinity_cut_keys",
	"otelcol_exporter_kafkaaffinity_hot_keys",
	"otelcol_exporter_kafkaaffinity_untracked_keys",
}

func TestOwnTelemetry(t *testing.T) {
	c := fakeCluster(t)
	cfg := testConfig()
	cfg.Brokers = c.ListenAddrs()
	cfg.HotKeys.Keys = []StaticHotKey{{Key: "hot", Fanout: 3}}
	// Detection on, with room for two keys: of a, b, the fallback key and the cut key, two
	// are sighted untracked.
	cfg.HotKeys.SpansPerSecond = 1e9
	cfg.HotKeys.MaxTrackedKeys = 2

	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	exp, err := newExporter(cfg, metadatatest.NewSettings(tt), clockwork.NewFakeClock())
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))

	td := ptrace.NewTraces()
	addResource(td, "a", 3, 3)
	addResource(td, "b", 2, 2)
	addResource(td, "", 1, 1)
	addResource(td, strings.Repeat("x", defaultMaxKeyBytes+1), 1, 1)
	addResource(td, "hot", 30, 30)
	require.NoError(t, exp.ConsumeTraces(context.Background(), td))

	for _, name := range ownMetricNames {
		_, err := tt.GetMetric(name)
		require.NoError(t, err, name)
	}
	class := func(v string) attribute.Set { return attribute.NewSet(attribute.String("class", v)) }
	ignore := metricdatatest.IgnoreTimestamp()
	metadatatest.AssertEqualExporterKafkaaffinityRecords(t, tt, []metricdata.DataPoint[int64]{
		{Attributes: class("normal"), Value: 4}, // a, b, the fallback key, the cut key
		{Attributes: class("hot"), Value: 3},    // one record per sub-key
	}, ignore)
	metadatatest.AssertEqualExporterKafkaaffinitySpans(t, tt, []metricdata.DataPoint[int64]{
		{Attributes: class("normal"), Value: 7},
		{Attributes: class("hot"), Value: 30},
	}, ignore)
	metadatatest.AssertEqualExporterKafkaaffinityFallbackSpans(t, tt, []metricdata.DataPoint[int64]{{Value: 1}}, ignore)
	metadatatest.AssertEqualExporterKafkaaffinityCutKeys(t, tt, []metricdata.DataPoint[int64]{{Value: 1}}, ignore)
	metadatatest.AssertEqualExporterKafkaaffinityHotKeys(t, tt, []metricdata.DataPoint[int64]{{Value: 1}}, ignore)
	metadatatest.AssertEqualExporterKafkaaffinityUntrackedKeys(t, tt, []metricdata.DataPoint[int64]{{Value: 2}}, ignore)

	// Shutdown unregisters the callbacks: the asynchronous two report nothing after it.
	require.NoError(t, exp.Shutdown(context.Background()))
	_, err = tt.GetMetric("otelcol_exporter_kafkaaffinity_hot_keys")
	require.Error(t, err)
}
