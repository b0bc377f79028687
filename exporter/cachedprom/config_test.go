package cachedprom

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

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
