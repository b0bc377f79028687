package hotspotfilter

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-red/otelcol-red/connector/hotspotfilter/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	tests := []struct {
		id           component.ID
		expected     *Config
		errorMessage string
	}{
		{
			id:       component.NewID(metadata.Type),
			expected: createDefaultConfig().(*Config),
		},
		{
			id: component.NewIDWithName(metadata.Type, "full"),
			expected: &Config{
				MaxServices:          500,
				ServiceExpiry:        time.Minute,
				MetricsFlushInterval: 5 * time.Second,
				Rules: []Rule{
					{
						Name:          "redis",
						Condition:     `attributes["db.system"] == "redis"`,
						Budget:        50,
						Burst:         10,
						SlowThreshold: 5 * time.Millisecond,
						KeepErrors:    false,
						SampleExcess:  100,
						Services:      ServiceFilter{Include: []string{"cart", "checkout"}, Exclude: []string{"checkout"}},
					},
					{
						Name:          "memcached",
						Condition:     `attributes["db.system"] == "memcached"`,
						Budget:        0.5,
						SlowThreshold: defaultSlowThreshold,
						KeepErrors:    true,
					},
				},
			},
		},
		{
			// A rule the user writes gets the default rule's budget,
			// slow_threshold and keep_errors, not zero values.
			id: component.NewIDWithName(metadata.Type, "rule_defaults"),
			expected: &Config{
				MaxServices:          defaultMaxServices,
				ServiceExpiry:        defaultServiceExpiry,
				MetricsFlushInterval: defaultMetricsFlushInterval,
				Rules: []Rule{{
					Name:          "mysql",
					Condition:     `attributes["db.system"] == "mysql"`,
					Budget:        defaultBudget,
					SlowThreshold: defaultSlowThreshold,
					KeepErrors:    true,
				}},
			},
		},
		{id: component.NewIDWithName(metadata.Type, "no_rules"), errorMessage: "rules must contain at least one rule"},
		{id: component.NewIDWithName(metadata.Type, "empty_name"), errorMessage: "rules[0].name must not be empty"},
		{id: component.NewIDWithName(metadata.Type, "duplicate_name"), errorMessage: `rules[1].name "redis" is already used by rules[0]`},
		{id: component.NewIDWithName(metadata.Type, "empty_condition"), errorMessage: "rules[0].condition must not be empty"},
		{id: component.NewIDWithName(metadata.Type, "bad_condition"), errorMessage: "rules[0].condition: "},
		{id: component.NewIDWithName(metadata.Type, "negative_budget"), errorMessage: "rules[0].budget must be a finite number greater or equal to 0"},
		{id: component.NewIDWithName(metadata.Type, "negative_burst"), errorMessage: "rules[0].burst must be greater or equal to 0"},
		{id: component.NewIDWithName(metadata.Type, "negative_slow_threshold"), errorMessage: "rules[0].slow_threshold must be greater or equal to 0"},
		{id: component.NewIDWithName(metadata.Type, "negative_sample_excess"), errorMessage: "rules[0].sample_excess must be greater or equal to 0"},
		{id: component.NewIDWithName(metadata.Type, "zero_max_services"), errorMessage: "max_services must be greater or equal to 1"},
		{id: component.NewIDWithName(metadata.Type, "negative_service_expiry"), errorMessage: "service_expiry must be greater or equal to 0"},
		{id: component.NewIDWithName(metadata.Type, "zero_flush_interval"), errorMessage: "metrics_flush_interval must be greater than 0"},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := createDefaultConfig()
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if tt.errorMessage != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.errorMessage)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.expected, cfg)
		})
	}
}

func TestDefaultConditionParses(t *testing.T) {
	_, err := parseCondition(defaultCondition, component.TelemetrySettings{})
	require.NoError(t, err)
}

func TestRuleBurst(t *testing.T) {
	assert.Equal(t, 7, (&Rule{Budget: 100, Burst: 7}).burst())
	assert.Equal(t, 100, (&Rule{Budget: 100}).burst(), "zero burst is one second of budget")
	assert.Equal(t, 1, (&Rule{Budget: 0.5}).burst(), "a fractional budget still allows one span")
	assert.Equal(t, 0, (&Rule{}).burst())
}
