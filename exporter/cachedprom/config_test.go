package cachedprom

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	full := createDefaultConfig().(*Config)
	full.NetAddr.Endpoint = "0.0.0.0:9465"
	full.Namespace = "red"
	full.ConstLabels = map[string]string{"region": "eu-1"}
	full.SendTimestamps = true
	full.MetricExpiration = 2 * time.Minute
	full.ResourceToTelemetrySettings.Enabled = true
	full.EnableOpenMetrics = true
	full.WithoutScopeInfo = true
	full.AddMetricSuffixes = false
	full.TranslationStrategy = underscoreEscapingWithoutSuffixes
	full.Path = "/prom"
	full.RenderInterval = 5 * time.Second
	full.MaxSeries = 5000
	full.MaxConcurrentScrapes = 4
	full.MinScrapeInterval = time.Second
	full.NativeHistograms.ClassicFallback = true

	constantLabels := createDefaultConfig().(*Config)
	constantLabels.ResourceConstantLabels.Included = []string{"k8s.*", "host.?ame"}
	constantLabels.ResourceConstantLabels.Excluded = []string{"k8s.pod.uid"}

	// Turned on, the queue has the exporterhelper's defaults, batching off.
	queue := createDefaultConfig().(*Config)
	q := exporterhelper.NewDefaultQueueConfig()
	q.Batch = configoptional.Default(*q.Batch.GetOrInsertDefault())
	queue.QueueBatchConfig = configoptional.Some(q)

	tests := []struct {
		id           component.ID
		expected     component.Config
		errorMessage string
	}{
		{id: component.NewID(metadata.Type), expected: createDefaultConfig()},
		{id: component.NewIDWithName(metadata.Type, "full"), expected: full},
		{id: component.NewIDWithName(metadata.Type, "invalid_translation_strategy"), errorMessage: "invalid translation_strategy: Whatever"},
		{id: component.NewIDWithName(metadata.Type, "invalid_path"), errorMessage: `path must start with '/', got "metrics"`},
		{id: component.NewIDWithName(metadata.Type, "path_with_wildcard"), errorMessage: `path must be a literal URL path without spaces or braces, got "/metrics/{job}"`},
		{id: component.NewIDWithName(metadata.Type, "path_with_method"), errorMessage: `path must be a literal URL path without spaces or braces, got "/GET /metrics"`},
		{id: component.NewIDWithName(metadata.Type, "invalid_max_concurrent_scrapes"), errorMessage: "max_concurrent_scrapes must not be negative"},
		{id: component.NewIDWithName(metadata.Type, "invalid_min_scrape_interval"), errorMessage: "min_scrape_interval must not be negative"},
		{id: component.NewIDWithName(metadata.Type, "invalid_render_interval"), errorMessage: "render_interval must be greater than 0"},
		{id: component.NewIDWithName(metadata.Type, "invalid_max_series"), errorMessage: "max_series must not be negative"},
		{id: component.NewIDWithName(metadata.Type, "invalid_const_label"), errorMessage: `const_labels: invalid label name "__reserved"`},
		{id: component.NewIDWithName(metadata.Type, "empty_endpoint"), errorMessage: "endpoint must not be empty"},
		{id: component.NewIDWithName(metadata.Type, "resource_constant_labels"), expected: constantLabels},
		{id: component.NewIDWithName(metadata.Type, "sending_queue"), expected: queue},
		{id: component.NewIDWithName(metadata.Type, "resource_constant_labels_enabled"), errorMessage: "resource_constant_labels: enabled and exclude_service_attributes are not supported; use included and excluded"},
		{id: component.NewIDWithName(metadata.Type, "both_resource_keys"), errorMessage: "resource_to_telemetry_conversion and resource_constant_labels cannot both be set"},
		{id: component.NewIDWithName(metadata.Type, "legacy_keys_beside_patterns"), errorMessage: "resource_to_telemetry_conversion: cannot configure both legacy enabled/exclude_service_attributes and included/excluded patterns"},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := createDefaultConfig()
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			if tt.errorMessage != "" {
				assert.ErrorContains(t, confmap.Validate(cfg), tt.errorMessage)
				return
			}
			require.NoError(t, confmap.Validate(cfg))
			assert.Equal(t, tt.expected, cfg)
		})
	}
}

// TestValidatePathKeepsStartFromPanicking: every path Validate accepts can
// be registered, and the ones http.ServeMux would panic on are refused with
// an error naming path.
func TestValidatePathKeepsStartFromPanicking(t *testing.T) {
	for _, p := range []string{"/metrics", "/", "/a/b/", "/metrics/{x}", "/{$}", "/a/{b...}", "/x y", "//", "/a\x00", "/%zz"} {
		err := validatePath(p)
		if err != nil {
			assert.Contains(t, err.Error(), "path", p)
			continue
		}
		assert.NotPanics(t, func() { http.NewServeMux().Handle(p, http.NotFoundHandler()) }, p)
	}
}

func TestTranslationFromConfig(t *testing.T) {
	for _, tt := range []struct {
		strategy     translationStrategy
		addSuffixes  bool
		ignoreAdd    bool // the DisableAddMetricSuffixes gate
		wantSuffixes bool
		wantUTF8     bool
	}{
		{"", true, false, true, false},
		{"", false, false, false, false},
		{"", false, true, true, false},
		{"", true, true, true, false},
		{underscoreEscapingWithSuffixes, false, false, true, false},
		{underscoreEscapingWithoutSuffixes, true, false, false, false},
		{underscoreEscapingWithoutSuffixes, true, true, false, false},
		{noUTF8EscapingWithSuffixes, false, true, true, true},
		{noTranslation, true, false, false, true},
		{noTranslation, true, true, false, true},
	} {
		cfg := &Config{TranslationStrategy: tt.strategy, AddMetricSuffixes: tt.addSuffixes}
		s, u := cfg.translation(tt.ignoreAdd)
		assert.Equal(t, tt.wantSuffixes, s, "%q/%v/%v", tt.strategy, tt.addSuffixes, tt.ignoreAdd)
		assert.Equal(t, tt.wantUTF8, u, "%q/%v/%v", tt.strategy, tt.addSuffixes, tt.ignoreAdd)
	}
}

// TestConfigAsPrometheusExporter loads the same keys into cachedprom's and
// the prometheus exporter's configurations: both accept them or both refuse
// them (ours naming the key), and the keys both have load the same.
func TestConfigAsPrometheusExporter(t *testing.T) {
	for _, tt := range []struct {
		name   string
		gate   bool // exporter.prometheus.DisableResourceToTelemetryConversion
		conf   map[string]any
		badKey string // the key the error names; empty: valid
	}{
		{name: "queue_on", conf: map[string]any{"sending_queue": map[string]any{"enabled": true}}},
		{name: "queue_sized", conf: map[string]any{"sending_queue": map[string]any{"queue_size": 50, "num_consumers": 2}}},
		{name: "queue_batched", conf: map[string]any{"sending_queue": map[string]any{"batch": map[string]any{"flush_timeout": "2s"}}}},
		{name: "constant_labels", conf: map[string]any{"resource_constant_labels": map[string]any{"included": []any{"k8s.*", "host.?ame"}, "excluded": []any{"k8s.pod.uid"}}}},
		{name: "constant_labels_excluded_only", conf: map[string]any{"resource_constant_labels": map[string]any{"excluded": []any{"service.*"}}}},
		{name: "constant_labels_enabled", conf: map[string]any{"resource_constant_labels": map[string]any{"enabled": true}}, badKey: "resource_constant_labels"},
		{name: "constant_labels_exclude_service", conf: map[string]any{"resource_constant_labels": map[string]any{"exclude_service_attributes": true}}, badKey: "resource_constant_labels"},
		{name: "both_keys", conf: map[string]any{
			"resource_to_telemetry_conversion": map[string]any{"enabled": true},
			"resource_constant_labels":         map[string]any{"included": []any{"*"}},
		}, badKey: "resource_constant_labels"},
		{name: "legacy", conf: map[string]any{"resource_to_telemetry_conversion": map[string]any{"enabled": true, "exclude_service_attributes": true}}},
		{name: "legacy_key_with_patterns", conf: map[string]any{"resource_to_telemetry_conversion": map[string]any{"included": []any{"host.*"}}}},
		{name: "legacy_key_mixed", conf: map[string]any{"resource_to_telemetry_conversion": map[string]any{"enabled": true, "included": []any{"host.*"}}}, badKey: "resource_to_telemetry_conversion"},
		{name: "legacy_under_gate", gate: true, conf: map[string]any{"resource_to_telemetry_conversion": map[string]any{"enabled": true}}, badKey: "resource_to_telemetry_conversion"},
		{name: "constant_labels_under_gate", gate: true, conf: map[string]any{"resource_constant_labels": map[string]any{"included": []any{"*"}}}},
		{name: "strategy", conf: map[string]any{"translation_strategy": "NoTranslation", "add_metric_suffixes": false}},
		{name: "bad_strategy", conf: map[string]any{"translation_strategy": "Whatever"}, badKey: "translation_strategy"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			setGate(t, disableResourceToTelemetryConversionGate, tt.gate)
			ours := createDefaultConfig().(*Config)
			sf := prometheusexporter.NewFactory()
			stock := sf.CreateDefaultConfig().(*prometheusexporter.Config)
			stock.ServerConfig.NetAddr.Endpoint = "localhost:9464"
			require.NoError(t, confmap.NewFromStringMap(tt.conf).Unmarshal(ours))
			require.NoError(t, confmap.NewFromStringMap(tt.conf).Unmarshal(stock))

			ourErr, stockErr := confmap.Validate(ours), confmap.Validate(stock)
			if tt.badKey != "" {
				require.Error(t, stockErr, "the stock exporter refuses it")
				require.ErrorContains(t, ourErr, tt.badKey)
				return
			}
			require.NoError(t, stockErr, "the stock exporter takes it")
			require.NoError(t, ourErr)
			assert.Equal(t, stock.QueueBatchConfig, ours.QueueBatchConfig, "sending_queue")
			assert.Equal(t, stock.ResourceConstantLabels, ours.ResourceConstantLabels, "resource_constant_labels")
			assert.Equal(t, stock.ResourceToTelemetrySettings, ours.ResourceToTelemetrySettings, "resource_to_telemetry_conversion")
			assert.Equal(t, string(stock.TranslationStrategy), string(ours.TranslationStrategy), "translation_strategy")
			assert.Equal(t, stock.AddMetricSuffixes, ours.AddMetricSuffixes, "add_metric_suffixes")
		})
	}
}
