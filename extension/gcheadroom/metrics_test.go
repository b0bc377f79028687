package gcheadroom

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelcol-red/otelcol-red/extension/gcheadroom/internal/metadatatest"
)

// The names users scrape (README, "Own telemetry"; testbed/e2e reads them from the binary, with
// the Prometheus unit suffix): a key renamed in metadata.yaml changes the generated asserts too,
// so they are spelled out here.
var ownMetricNames = []string{
	"otelcol_extension_gcheadroom_gc_percent",
	"otelcol_extension_gcheadroom_live_heap",
	"otelcol_extension_gcheadroom_off_heap",
	"otelcol_extension_gcheadroom_memory_limit",
}

func newTelemetryTuner(t *testing.T) (*tuner, *componenttest.Telemetry) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	tu, err := newTuner(tt.NewTelemetrySettings(), createDefaultConfig())
	require.NoError(t, err)
	return tu, tt
}

func TestOwnTelemetryReadsTheTunersAtomics(t *testing.T) {
	tu, tt := newTelemetryTuner(t)
	tu.percent.Store(37)
	tu.live.Store(300 * mib)
	tu.offHeap.Store(40 * mib)
	tu.limit.Store(900 * mib)

	for _, name := range ownMetricNames {
		_, err := tt.GetMetric(name)
		require.NoError(t, err, name)
	}
	point := func(v int64) []metricdata.DataPoint[int64] { return []metricdata.DataPoint[int64]{{Value: v}} }
	metadatatest.AssertEqualExtensionGcheadroomGcPercent(t, tt, point(37), metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualExtensionGcheadroomLiveHeap(t, tt, point(300*mib), metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualExtensionGcheadroomOffHeap(t, tt, point(40*mib), metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualExtensionGcheadroomMemoryLimit(t, tt, point(900*mib), metricdatatest.IgnoreTimestamp())

	tu.percent.Store(-1)
	metadatatest.AssertEqualExtensionGcheadroomGcPercent(t, tt, point(-1), metricdatatest.IgnoreTimestamp())
	require.NoError(t, tu.Shutdown(context.Background()))
}

// Without a memory limit the runtime reads math.MaxInt64; no point is better than that one.
func TestOwnTelemetryOmitsAnAbsentMemoryLimit(t *testing.T) {
	tu, tt := newTelemetryTuner(t)
	tu.limit.Store(math.MaxInt64)
	_, err := tt.GetMetric("otelcol_extension_gcheadroom_memory_limit")
	require.Error(t, err)
	_, err = tt.GetMetric("otelcol_extension_gcheadroom_gc_percent")
	require.NoError(t, err)
	require.NoError(t, tu.Shutdown(context.Background()))
}

// Shutdown unregisters the callbacks: a stopped extension reports nothing.
func TestOwnTelemetryStopsAtShutdown(t *testing.T) {
	tu, tt := newTelemetryTuner(t)
	tu.limit.Store(900 * mib)
	require.NoError(t, tu.Shutdown(context.Background()))
	for _, name := range ownMetricNames {
		_, err := tt.GetMetric(name)
		assert.Error(t, err, name)
	}
}
