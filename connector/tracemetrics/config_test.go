package tracemetrics

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/metadata"
	"github.com/otelcol-red/otelcol-red/internal/spanfilter"
)

func ptr[T any](v T) *T { return &v }

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	def := func(mod func(*Config)) *Config {
		c := createDefaultConfig().(*Config)
		mod(c)
		return c
	}
	tests := []struct {
		id           string
		expected     *Config
		errorMessage string
	}{
		{id: "default", expected: def(func(*Config) {})},
		{id: "full", expected: def(func(c *Config) {
			c.Histogram.Explicit = configoptional.Some(ExplicitHistogramConfig{Buckets: []time.Duration{
				100 * time.Microsecond, time.Millisecond, 2 * time.Millisecond, 6 * time.Millisecond,
				10 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
			}})
			c.Dimensions = []Dimension{{Name: "http.method", Default: ptr("GET")}, {Name: "http.status_code"}, {Glob: "k8s.*.name"}, {Glob: "db.**.name"}}
			c.Exemplars = ExemplarsConfig{Enabled: true, MaxPerDataPoint: defaultMaxPerDataPoint}
			c.ExcludeDimensions = []string{"status.code"}
			c.DimensionsCacheSize = 1000
			c.AggregationTemporality = delta
			c.MetricsFlushInterval = 30 * time.Second
			c.MetricsExpiration = 5 * time.Minute
			c.SeriesExpiration = 5 * time.Minute
			c.EnableMetricsSamplingMethod = true
			c.Events = EventsConfig{Enabled: true, Dimensions: []Dimension{{Name: "exception.type"}, {Name: "exception.message"}}}
			c.ResourceMetricsKeyAttributes = []string{"service.name", "telemetry.sdk.language", "telemetry.sdk.name"}
			c.IncludeInstrumentationScope = []string{"express"}
			c.AggregationCardinalityLimit = 1500
			c.TimestampCacheSize = ptr(2000)
		})},
		{id: "exponential", expected: def(func(c *Config) {
			c.Histogram.Unit = Seconds
			c.Histogram.Exponential = configoptional.Some(ExponentialHistogramConfig{MaxSize: 80})
		})},
		{id: "ours", expected: def(func(c *Config) {
			c.MaxSeries = 50000
			c.MaxSeriesPerService = 5000
			c.MaxCardinalityPerLabel = 100
			c.CapSelection = CapSelectionConfig{By: selectByArrival, MemoryMiB: 32, SketchSize: 64}
			c.SeriesExpiration = 10 * time.Minute
			c.RingSize = 4096
			c.RingMemoryMiB = 256
			c.Namespace = "red"
		})},
		{id: "globs", expected: def(func(c *Config) {
			c.Dimensions = []Dimension{{Name: "http.method"}, {Glob: "k8s.*.name"}}
			c.CallsDimensions = []Dimension{{Glob: "http.*"}}
			c.Histogram.Dimensions = []Dimension{{Glob: "db.**"}}
			c.Events = EventsConfig{Enabled: true, Dimensions: []Dimension{{Glob: "exception.*"}}}
		})},
		{id: "tempo", expected: def(func(c *Config) {
			c.IntrinsicDimensions = IntrinsicDimensions{StatusMessage: true, SpanKind: ptr(false)}
			c.DimensionMappings = []DimensionMapping{{Name: "endpoint", SourceLabels: []string{"http.method", "http.route"}, Join: " "}}
			c.FilterPolicies = []spanfilter.Policy{
				{
					Include: &spanfilter.Match{MatchType: "strict", Attributes: []spanfilter.Attribute{
						{Key: "kind", Value: "SPAN_KIND_SERVER"}, {Key: "span.http.status_code", Value: 500},
					}},
					Exclude: &spanfilter.Match{MatchType: "regex", Attributes: []spanfilter.Attribute{{Key: "resource.service.name", Value: "^canary-.*"}}},
				},
				{IncludeAny: &spanfilter.Match{MatchType: "strict", Attributes: []spanfilter.Attribute{{Key: "span.sampled", Value: true}}}},
			}
			c.SpanMultiplierKey = "X-SampleRatio"
			c.EnableTargetInfo = true
			c.TargetInfoExcludedDimensions = []string{"process.pid", "host.id"}
		})},
		{id: "tempo_bad_filter", errorMessage: "filter_policies[0].exclude.attributes[0].value: invalid regular expression"},
		{id: "invalid_histogram_unit", errorMessage: `unknown Unit "h"`},
		{id: "glob_and_name", errorMessage: `dimensions: entry 0 sets both name "http.method" and glob "http.*": set one of them`},
		{id: "neither_glob_nor_name", errorMessage: "dimensions: entry 0 sets neither name nor glob"},
		{id: "glob_with_default", errorMessage: `dimensions: entry 0: default is not supported with glob "db.*"`},
		{id: "invalid_glob", errorMessage: `histogram.dimensions: entry 0: invalid glob "db.[": `},
		{id: "glob_matches_builtin", errorMessage: `calls_dimensions: glob "span.*" matches the built-in attribute span.kind`},
		{id: "glob_matches_name", errorMessage: `events.dimensions: glob "exception.*" matches exception.type, a name of the same list`},
		{id: "duplicate_dimension", errorMessage: "dimensions: duplicate dimension name span.kind"},
		{id: "duplicate_calls_dimension", errorMessage: "calls_dimensions: duplicate dimension name tenant"},
		{id: "both_histograms", errorMessage: "histogram: use either `explicit` or `exponential` buckets histogram"},
		{id: "unsorted_buckets", errorMessage: "histogram.explicit.buckets: must be strictly increasing, 2ms follows 10ms"},
		{id: "events_without_dimensions", errorMessage: "events.dimensions: no dimensions configured for events"},
		{id: "negative_flush_interval", errorMessage: "metrics_flush_interval: -1s, the duration should be positive"},
		{id: "negative_expiration", errorMessage: "metrics_expiration: -1s, the duration should be positive"},
		{id: "negative_cardinality_limit", errorMessage: "aggregation_cardinality_limit: -1, the limit should be positive"},
		{id: "negative_exemplars", errorMessage: "exemplars.max_per_data_point: -1, the value should be positive"},
		{id: "negative_exemplar_slow_threshold", errorMessage: "exemplars.slow_threshold: -1ms, the duration should not be negative"},
		{id: "zero_timestamp_cache_delta", errorMessage: "metric_timestamp_cache_size: 0, the maximum number of the items in the cache should be positive"},
		{id: "zero_resource_cache", errorMessage: "resource_metrics_cache_size: 0, the value should be positive"},
		{id: "negative_max_series", errorMessage: "max_series: -1, the value should be positive or 0 (no limit)"},
		{id: "negative_max_series_per_service", errorMessage: "max_series_per_service: -5, the value should be positive or 0 (no limit)"},
		{id: "negative_series_expiration", errorMessage: "series_expiration: -1m0s, the duration should be positive"},
		{id: "ring_size_one", errorMessage: "ring_size: 1 is out of range, use 0 (default 1024) or 2..1048576"},
		{id: "negative_ring_memory", errorMessage: "ring_memory_mib: -1 is out of range, use 0 (default 64) or 1..65536"},
		{id: "unknown_cap_selection", errorMessage: `cap_selection.by: "random", use "traffic" or "arrival"`},
		{id: "negative_selection_memory", errorMessage: "cap_selection.memory_mib: -1 is out of range, use 0 (default 16) or 1..65536"},
		{id: "negative_max_cardinality_per_label", errorMessage: "max_cardinality_per_label: -1, the value should be positive or 0 (no limit)"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			cfg := createDefaultConfig()
			sub, err := cm.Sub(component.NewIDWithName(metadata.Type, tt.id).String())
			require.NoError(t, err)
			err = sub.Unmarshal(cfg)
			if err == nil {
				err = confmap.Validate(cfg)
			}
			if tt.errorMessage != "" {
				require.ErrorContains(t, err, tt.errorMessage)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.expected, cfg)
		})
	}
}

func TestConfigStruct(t *testing.T) {
	require.NoError(t, componenttest.CheckConfigStruct(createDefaultConfig()))
}

func TestDefaultsMatchSpanmetrics(t *testing.T) {
	c := createDefaultConfig().(*Config)
	require.Equal(t, cumulative, c.AggregationTemporality)
	require.Equal(t, 60*time.Second, c.MetricsFlushInterval)
	require.Equal(t, "traces.span.metrics", c.Namespace)
	require.Equal(t, Milliseconds, c.Histogram.Unit)
	require.Equal(t, 1000, c.ResourceMetricsCacheSize)
	require.Equal(t, 5, c.Exemplars.MaxPerDataPoint)
	require.Zero(t, c.AggregationCardinalityLimit)
	require.Zero(t, c.MetricsExpiration)
	require.Nil(t, c.TimestampCacheSize)
	require.False(t, c.EnableMetricsSamplingMethod)
	require.Empty(t, c.ExcludeDimensions, "collector.instance.id included")
}
