package tracegraph

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-red/otelcol-red/connector/tracegraph/internal/metadata"
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
		{id: "servicegraph", expected: def(func(c *Config) {
			c.LatencyHistogramBuckets = []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, time.Second, 5 * time.Second, 10 * time.Second}
			c.Dimensions = []string{"dimension-1", "dimension-2"}
			c.Store = StoreConfig{TTL: time.Second, MaxItems: 10}
			c.CacheLoop = 2 * time.Minute
			c.StoreExpirationLoop = 5 * time.Second
			c.VirtualNodePeerAttributes = []string{"db.name", "rpc.service"}
			c.VirtualNodeExtraLabel = true
			c.MetricsFlushInterval = ptr(30 * time.Second)
			c.DatabaseNameAttributes = []string{"db.namespace", "db.name"}
			c.MetricsTimestampOffset = 10 * time.Second
		})},
		{id: "exponential", expected: def(func(c *Config) { c.ExponentialHistogramMaxSize = 80 })},
		{id: "ours", expected: def(func(c *Config) {
			c.SeriesExpiration = 30 * time.Minute
			c.RingSize = 4096
			c.Sampling.Weighted = false
			c.AggregationTemporality = temporalityDelta
			c.MaxSeriesPerEdge = 200
			c.MaxCardinalityPerLabel = 100
		})},
		{id: "messaging", expected: def(func(c *Config) {
			c.Links.Enabled = false
			c.EnableMessagingSystemLatencyHistogram = true
			c.Exemplars = ExemplarsConfig{Enabled: true, MaxPerDataPoint: 3, SlowThreshold: 500 * time.Millisecond}
		})},
		{id: "bad_exemplars", errorMessage: "exemplars.max_per_data_point: must be between 0 and 255, got 256"},
		{id: "bad_exemplars", errorMessage: "exemplars.slow_threshold: can not be negative"},
		{id: "tempo", expected: def(func(c *Config) {
			c.SpanMultiplierKey = "X-SampleRatio"
			c.FilterPolicies = []spanfilter.Policy{{
				Include: &spanfilter.Match{MatchType: "regex", Attributes: []spanfilter.Attribute{{Key: "kind", Value: "SPAN_KIND_(SERVER|CONSUMER|CLIENT|PRODUCER)"}}},
				Exclude: &spanfilter.Match{MatchType: "strict", Attributes: []spanfilter.Attribute{{Key: "resource.deployment.environment", Value: "dev"}}},
			}}
		})},
		{id: "tempo_bad_filter", errorMessage: "filter_policies[0].include.attributes[0].value: [500] ([]interface {}): a strict condition compares a string, an int, a double or a bool"},
		{id: "both_histograms", errorMessage: "latency_histogram_buckets: use either"},
		{id: "unsorted_buckets", errorMessage: "latency_histogram_buckets[1]: 100ms is not greater"},
		{id: "bad_store", errorMessage: "store.ttl: must be positive"},
		{id: "bad_store", errorMessage: "store.max_items: must be positive, got -1"},
		{id: "negative_interval", errorMessage: "metrics_flush_interval: can not be negative"},
		{id: "duplicate_dimension", errorMessage: `dimensions[1]: "a" is listed twice`},
		{id: "bad_ring", errorMessage: "ring_size: must be between 2"},
		{id: "bad_limits", errorMessage: "max_series_per_edge: -1, the value should be positive or 0 (no limit)"},
		{id: "bad_limits", errorMessage: "max_cardinality_per_label: -2, the value should be positive or 0 (no limit)"},
		{id: "bad_temporality", errorMessage: `aggregation_temporality: must be AGGREGATION_TEMPORALITY_CUMULATIVE or AGGREGATION_TEMPORALITY_DELTA, got "delta"`},
	}
	for _, tt := range tests {
		t.Run(tt.id+"/"+tt.errorMessage, func(t *testing.T) {
			cfg := createDefaultConfig()
			sub, err := cm.Sub(component.NewIDWithName(metadata.Type, tt.id).String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if tt.errorMessage != "" {
				require.ErrorContains(t, err, tt.errorMessage)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.expected, cfg)
		})
	}
}

func TestPlanFollowsServicegraphDefaults(t *testing.T) {
	c := createDefaultConfig().(*Config)
	p := newPlan(c)
	require.Equal(t, defaultBoundsSeconds, p.bounds)
	require.Equal(t, defaultPeerAttributes, p.peerAttrs)
	require.Equal(t, defaultDatabaseNameAttributes, p.dbAttrs)
	require.Equal(t, defaultFlushInterval, p.flushInterval)

	c.VirtualNodePeerAttributes = []string{}
	c.MetricsFlushInterval = ptr(time.Duration(0))
	c.LatencyHistogramBuckets = []time.Duration{1500 * time.Microsecond, time.Second}
	p = newPlan(c)
	require.Nil(t, p.peerAttrs, "an empty list turns virtual nodes off")
	require.Zero(t, p.flushInterval)
	require.Equal(t, []float64{0.0015, 1}, p.bounds)

	require.True(t, p.links, "links are followed by default")
	require.Equal(t, 2, p.histograms, "no messaging histogram by default")
	require.Zero(t, p.exemplars, "no exemplars by default")
	c.EnableMessagingSystemLatencyHistogram = true
	c.Exemplars.Enabled = true
	p = newPlan(c)
	require.Equal(t, 3, p.histograms)
	require.Equal(t, defaultMaxExemplars, p.exemplars)
}
