package cachedprom

import (
	"context"
	"testing"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/metadata"
)

func TestCreateDefaultConfig(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	assert.NoError(t, componenttest.CheckConfigStruct(cfg))
	assert.NoError(t, cfg.Validate())
	assert.Equal(t, defaultEndpoint, cfg.NetAddr.Endpoint)
	assert.Equal(t, "localhost:9464", cfg.NetAddr.Endpoint, "default must bind loopback only")
	assert.Equal(t, defaultPath, cfg.Path)
	assert.Equal(t, defaultMetricExpiration, cfg.MetricExpiration)
	assert.True(t, cfg.AddMetricSuffixes)
}

func TestFactoryLifecycle(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.NetAddr.Endpoint = freeEndpoint(t)
	cfg.ResourceToTelemetrySettings.Enabled = true
	exp, err := f.CreateMetrics(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, exp.ConsumeMetrics(context.Background(), mixedMetrics(0, testBase)))
	body, _ := scrape(t, "http://"+cfg.NetAddr.Endpoint+"/metrics", "", false)
	assert.Contains(t, string(body), "queue_size{")
	require.NoError(t, exp.Shutdown(context.Background()))
	// A second Shutdown is harmless.
	require.NoError(t, exp.Shutdown(context.Background()))
}

func TestStartFailsOnBusyPort(t *testing.T) {
	first, _ := startOurs(t, nil)
	cfg := createDefaultConfig().(*Config)
	cfg.NetAddr.Endpoint = first.cfg.NetAddr.Endpoint
	e, err := newExporter(cfg, exportertest.NewNopSettings(metadata.Type), clockwork.NewRealClock())
	require.NoError(t, err)
	assert.Error(t, e.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, e.Shutdown(context.Background()))
}
