package tracemetrics

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
)

// newPlan derives each fact the stages read once; these are the ones with a rule beyond
// copying a field.
func TestPlanDerivesEachFactOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		raw   map[string]any
		check func(t *testing.T, p *plan)
	}{
		{"defaults", map[string]any{}, func(t *testing.T, p *plan) {
			require.False(t, p.isDelta)
			require.Equal(t, len(defaultHistogramBucketsMs)+1, p.nb)
			require.Zero(t, p.expoSize)
			require.Zero(t, p.exemplars, "exemplars are off unless enabled")
			require.Equal(t, int64(defaultSeriesExpiration), p.seriesIdle)
			require.Equal(t, defaultRingSize, p.ringSize)
			require.Equal(t, defaultFlushInterval, p.flushInterval)
			require.Equal(t, DefaultNamespace+".calls", p.callsName)
			require.Nil(t, p.keyAttrs)
			require.True(t, p.copyResource)
			f := p.families[p.callsFamily]
			require.True(t, f.duration, "calls and duration share one family")
			require.Equal(t, p.nb, p.bucketsOf(f))
			require.False(t, p.expoOf(f))
		}},
		{"delta without series_expiration", map[string]any{
			"aggregation_temporality": delta, "series_expiration": 0, "metrics_flush_interval": "10s",
		}, func(t *testing.T, p *plan) {
			require.True(t, p.isDelta)
			require.Equal(t, int64(deltaIdleIntervals*10*time.Second), p.seriesIdle)
		}},
		{"cumulative without series_expiration", map[string]any{"series_expiration": 0}, func(t *testing.T, p *plan) {
			require.Zero(t, p.seriesIdle)
		}},
		{"exponential, clamped", map[string]any{"histogram": map[string]any{"exponential": map[string]any{"max_size": 1}}}, func(t *testing.T, p *plan) {
			require.Zero(t, p.nb)
			require.Nil(t, p.bounds)
			require.EqualValues(t, 2, p.expoSize)
			require.True(t, p.expoOf(p.families[p.durationFamily]))
		}},
		{"exponential, default size", map[string]any{"histogram": map[string]any{"exponential": map[string]any{}}}, func(t *testing.T, p *plan) {
			require.EqualValues(t, defaultExpoMaxSize, p.expoSize)
		}},
		{"split families", map[string]any{"calls_dimensions": dims("a")}, func(t *testing.T, p *plan) {
			calls, duration := p.families[p.callsFamily], p.families[p.durationFamily]
			require.NotEqual(t, p.callsFamily, p.durationFamily)
			require.Zero(t, p.bucketsOf(calls), "the calls family keeps no buckets")
			require.Equal(t, p.nb, p.bucketsOf(duration))
		}},
		{"histogram disabled", map[string]any{"histogram": map[string]any{"disable": true}}, func(t *testing.T, p *plan) {
			require.Zero(t, p.nb)
			require.Zero(t, p.expoSize)
			require.Equal(t, -1, p.durationFamily)
			require.False(t, p.expoOf(p.families[p.callsFamily]))
		}},
		{"exemplars", map[string]any{"exemplars": map[string]any{"enabled": true, "max_per_data_point": 3}}, func(t *testing.T, p *plan) {
			require.Equal(t, 3, p.exemplars)
		}},
		{"resource key attributes", map[string]any{"resource_metrics_key_attributes": []any{"service.name"}}, func(t *testing.T, p *plan) {
			require.Equal(t, map[string]struct{}{"service.name": {}}, p.keyAttrs)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			require.NoError(t, confmap.NewFromStringMap(tc.raw).Unmarshal(cfg))
			require.NoError(t, cfg.Validate())
			p, err := newPlan(cfg, followedGates{}, "")
			require.NoError(t, err)
			tc.check(t, p)
		})
	}
}
