package cachedprom

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
)

// fallbackInput is the mixed input plus a cumulative exponential histogram
// with both sides, a gap and a zero bucket.
func fallbackInput(base time.Time) []pmetric.Metrics {
	return []pmetric.Metrics{
		promtest.MixedMetrics(0, base), promtest.MixedMetrics(1, base),
		promtest.ExpBatch(false, 0, promtest.ExpPoint{Scale: 3, PosOffset: -5, Pos: []uint64{1, 0, 2, 7}, NegOffset: 2, Neg: []uint64{4, 0, 1},
			ZeroCount: 2, ZeroThreshold: 0.001, Sum: 3}.Build()),
	}
}

// TestClassicFallbackOffLeavesTextUnchanged: with the key at its default
// (and set false), the text and OpenMetrics bodies of input with
// exponential histograms are byte for byte those rendered before the key
// existed (testdata/exp_*.golden, written by the renderer of the commit
// before it).
func TestClassicFallbackOffLeavesTextUnchanged(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	for _, explicit := range []bool{false, true} {
		for _, om := range []bool{false, true} {
			cfg := createDefaultConfig().(*Config)
			cfg.EnableOpenMetrics = om
			if explicit {
				require.NoError(t, confmap.NewFromStringMap(map[string]any{"native_histograms": map[string]any{"classic_fallback": false}}).Unmarshal(cfg))
			}
			require.False(t, cfg.NativeHistograms.ClassicFallback)
			text, _, s, rd := renderBoth(cfg, fallbackInput(base)...)
			golden := "exp_text.golden"
			if om {
				text = rd.OpenMetrics(nil, s)
				golden = "exp_openmetrics.golden"
			}
			want, err := os.ReadFile(filepath.Join("testdata", golden))
			require.NoError(t, err)
			assert.Equal(t, string(want), string(text), "%s (key set explicitly: %v)", golden, explicit)
		}
	}
}

// TestClassicFallbackConfig: the key loads under native_histograms, and a
// value that is not a boolean is refused naming it.
func TestClassicFallbackConfig(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	assert.False(t, cfg.NativeHistograms.ClassicFallback, "off by default, as the stock exporter")
	require.NoError(t, confmap.NewFromStringMap(map[string]any{"native_histograms": map[string]any{"classic_fallback": true}}).Unmarshal(cfg))
	assert.True(t, cfg.NativeHistograms.ClassicFallback)
	err := confmap.NewFromStringMap(map[string]any{"native_histograms": map[string]any{"classic_fallback": "sometimes"}}).Unmarshal(cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "native_histograms")
	assert.Contains(t, err.Error(), "classic_fallback")
}

// TestClassicFallbackServed: the key reaches the renderer of a running
// exporter: a text scrape gets the classic buckets with it, only +Inf
// without it, and the protobuf body keeps the native histogram either way.
func TestClassicFallbackServed(t *testing.T) {
	for _, on := range []bool{false, true} {
		e, url := startOurs(t, func(c *Config) { c.NativeHistograms.ClassicFallback = on })
		require.NoError(t, e.ConsumeMetrics(context.Background(), fallbackInput(time.Unix(1_700_000_000, 0))[2]))
		e.renderNow()
		body, _ := promtest.Scrape(t, url, "text/plain;version=0.0.4", true)
		buckets := strings.Count(string(body), "latency_bucket{")
		if on {
			// 4 positive and 3 negative Prometheus buckets (scale 3, the empty ones
			// in the range included), the zero bucket, +Inf.
			assert.Equal(t, 9, buckets, "%s", body)
		} else {
			assert.Equal(t, 1, buckets, "%s", body)
		}
		assert.Contains(t, string(body), `latency_bucket{otel_scope_name="",otel_scope_schema_url="",otel_scope_version="",le="+Inf"} 17`)
		promtest.Scrape(t, url, acceptProm3Native, true)
		e.renderNow()
		pb, _ := promtest.Scrape(t, url, acceptProm3Native, true)
		fams := promtest.DecodeProto(t, pb)
		require.Len(t, fams, 1)
		assert.NotNil(t, fams[0].Metric[0].Histogram.Schema)
		assert.Empty(t, fams[0].Metric[0].Histogram.Bucket)
	}
}
