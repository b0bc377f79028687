package tracemetrics

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// newPlan derives each fact the stages read once; these are the ones with a rule beyond
// copying a field.
func TestPlanDerivesEachFactOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		raw   map[string]any
		check func(t *testing.T, p *series.Plan)
	}{
		{"defaults", map[string]any{}, func(t *testing.T, p *series.Plan) {
			require.False(t, p.IsDelta)
			require.Equal(t, len(defaultHistogramBucketsMs)+1, p.NB)
			require.Zero(t, p.ExpoSize)
			require.Zero(t, p.Exemplars, "exemplars are off unless enabled")
			require.Equal(t, int64(defaultSeriesExpiration), p.SeriesIdle)
			require.Equal(t, defaultRingSize, p.RingSize)
			require.Equal(t, defaultFlushInterval, p.FlushInterval)
			require.Equal(t, DefaultNamespace+".calls", p.CallsName)
			require.Nil(t, p.KeyAttrs)
			require.True(t, p.CopyResource)
			f := p.Families[p.CallsFamily]
			require.True(t, f.Duration, "calls and duration share one family")
			require.Equal(t, p.NB, p.BucketsOf(f))
			require.False(t, p.ExpoOf(f))
		}},
		{"delta without series_expiration", map[string]any{
			"aggregation_temporality": delta, "series_expiration": 0, "metrics_flush_interval": "10s",
		}, func(t *testing.T, p *series.Plan) {
			require.True(t, p.IsDelta)
			require.Equal(t, int64(deltaIdleIntervals*10*time.Second), p.SeriesIdle)
		}},
		{"cumulative without series_expiration", map[string]any{"series_expiration": 0}, func(t *testing.T, p *series.Plan) {
			require.Zero(t, p.SeriesIdle)
		}},
		{"exponential, clamped", map[string]any{"histogram": map[string]any{"exponential": map[string]any{"max_size": 1}}}, func(t *testing.T, p *series.Plan) {
			require.Zero(t, p.NB)
			require.Nil(t, p.Bounds)
			require.EqualValues(t, 2, p.ExpoSize)
			require.True(t, p.ExpoOf(p.Families[p.DurationFamily]))
		}},
		{"exponential, default size", map[string]any{"histogram": map[string]any{"exponential": map[string]any{}}}, func(t *testing.T, p *series.Plan) {
			require.EqualValues(t, defaultExpoMaxSize, p.ExpoSize)
		}},
		{"split families", map[string]any{"calls_dimensions": dims("a")}, func(t *testing.T, p *series.Plan) {
			calls, duration := p.Families[p.CallsFamily], p.Families[p.DurationFamily]
			require.NotEqual(t, p.CallsFamily, p.DurationFamily)
			require.Zero(t, p.BucketsOf(calls), "the calls family keeps no buckets")
			require.Equal(t, p.NB, p.BucketsOf(duration))
		}},
		{"histogram disabled", map[string]any{"histogram": map[string]any{"disable": true}}, func(t *testing.T, p *series.Plan) {
			require.Zero(t, p.NB)
			require.Zero(t, p.ExpoSize)
			require.Equal(t, -1, p.DurationFamily)
			require.False(t, p.ExpoOf(p.Families[p.CallsFamily]))
		}},
		{"exemplars", map[string]any{"exemplars": map[string]any{"enabled": true, "max_per_data_point": 3}}, func(t *testing.T, p *series.Plan) {
			require.Equal(t, 3, p.Exemplars)
		}},
		{"resource key attributes", map[string]any{"resource_metrics_key_attributes": []any{"service.name"}}, func(t *testing.T, p *series.Plan) {
			require.Equal(t, map[string]struct{}{"service.name": {}}, p.KeyAttrs)
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
