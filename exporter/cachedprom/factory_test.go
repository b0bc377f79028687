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
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/metadata"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
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
	assert.False(t, cfg.QueueBatchConfig.HasValue(), "the sending queue is off unless configured")
	assert.True(t, cfg.ResourceConstantLabels.IsEmpty())
}

func TestFactoryLifecycle(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.NetAddr.Endpoint = promtest.FreeEndpoint(t)
	cfg.ResourceToTelemetrySettings.Enabled = true
	exp, err := f.CreateMetrics(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, exp.ConsumeMetrics(context.Background(), promtest.MixedMetrics(0, promtest.TestBase)))
	body, _ := promtest.Scrape(t, "http://"+cfg.NetAddr.Endpoint+"/metrics", "", false)
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

// TestFactoryPutsResourceLabelsAsTheStockExporter: the factory wraps the
// exporter as the stock exporter's does: resource_constant_labels puts the
// attributes it selects on the series, the deprecated
// resource_to_telemetry_conversion is still taken (with a warning), and a
// warning says when add_metric_suffixes: false is ignored.
func TestFactoryPutsResourceLabelsAsTheStockExporter(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mutate   func(*Config)
		label    string // on queue_size, or "" for none of the resource's
		warnings []string
	}{
		{"none", func(*Config) {}, "", nil},
		{"constant_labels", func(c *Config) { c.ResourceConstantLabels.Included = []string{"k8s.*"} }, `k8s_pod_name="checkout-abc"`, nil},
		{"legacy", func(c *Config) { c.ResourceToTelemetrySettings.Enabled = true }, `host_name="node \"7\""`,
			[]string{"resource_to_telemetry_conversion is deprecated; use resource_constant_labels instead"}},
		{"suffixes_off_ignored", func(c *Config) { c.AddMetricSuffixes = false }, "",
			[]string{"add_metric_suffixes is ignored while the exporter.prometheusexporter.DisableAddMetricSuffixes feature gate is enabled (its default); set translation_strategy to UnderscoreEscapingWithoutSuffixes for names without suffixes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFactory()
			cfg := f.CreateDefaultConfig().(*Config)
			cfg.NetAddr.Endpoint = promtest.FreeEndpoint(t)
			cfg.RenderInterval = 10 * time.Millisecond
			tc.mutate(cfg)
			require.NoError(t, confmap.Validate(cfg))
			core, logs := observer.New(zap.WarnLevel)
			set := exportertest.NewNopSettings(metadata.Type)
			set.Logger = zap.New(core)
			exp, err := f.CreateMetrics(context.Background(), set, cfg)
			require.NoError(t, err)
			require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
			defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()
			var warnings []string
			for _, e := range logs.All() {
				warnings = append(warnings, e.Message)
			}
			assert.Equal(t, tc.warnings, warnings)

			require.NoError(t, exp.ConsumeMetrics(context.Background(), promtest.MixedMetrics(0, promtest.TestBase)))
			url := "http://" + cfg.NetAddr.Endpoint + "/metrics"
			var line string
			require.Eventually(t, func() bool {
				body, _ := promtest.Scrape(t, url, "", false)
				for _, l := range strings.Split(string(body), "\n") {
					if strings.HasPrefix(l, `queue_size{`) && strings.Contains(l, `queue="orders"`) {
						line = l
						return true
					}
				}
				return false
			}, 5*time.Second, 10*time.Millisecond)
			if tc.label == "" {
				assert.NotContains(t, line, "k8s_pod_name")
				assert.NotContains(t, line, "host_name")
				return
			}
			assert.Contains(t, line, tc.label)
		})
	}
}
