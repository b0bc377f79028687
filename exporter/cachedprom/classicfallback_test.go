package cachedprom

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
)

// fallbackInput is the mixed input plus a cumulative exponential histogram
// with both sides, a gap and a zero bucket.
func fallbackInput(base time.Time) []pmetric.Metrics {
	return []pmetric.Metrics{
		mixedMetrics(0, base), mixedMetrics(1, base),
		expBatch(false, 0, expPoint{scale: 3, posOffset: -5, pos: []uint64{1, 0, 2, 7}, negOffset: 2, neg: []uint64{4, 0, 1},
			zeroCount: 2, zeroThreshold: 0.001, sum: 3}.build()),
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
				text = rd.renderOpenMetrics(nil, s)
				golden = "exp_openmetrics.golden"
			}
			want, err := os.ReadFile(filepath.Join("testdata", golden))
			require.NoError(t, err)
			assert.Equal(t, string(want), string(text), "%s (key set explicitly: %v)", golden, explicit)
		}
	}
}

// fallbackRender renders one cumulative exponential histogram point with
// the fallback on: the text body and the native histogram of the protobuf
// body.
func fallbackRender(t *testing.T, dp pmetric.ExponentialHistogramDataPoint, om bool) ([]byte, *dto.Histogram) {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.NativeHistograms.ClassicFallback = true
	cfg.EnableOpenMetrics = om
	s := newSeriesStore(cfg, zap.NewNop())
	s.consume(expBatch(false, 0, dp), time.Now())
	rd := &renderer{classicFallback: true}
	text := rd.renderText(nil, s)
	if om {
		text = rd.renderOpenMetrics(nil, s)
	}
	fams := decodeProto(t, rd.renderProto(nil, s))
	require.Len(t, fams, 1)
	require.Len(t, fams[0].Metric, 1)
	return text, fams[0].Metric[0].Histogram
}

// checkFallback checks the classic buckets of text against the native
// histogram h of point dp with Prometheus' code: each `le` is the bound of
// a bucket in the range of dp's buckets (Prometheus' bucket iterators give
// the bounds) or the zero threshold, every bucket of h with a count has
// its bound among the `le`s, and each cumulative count is what h's buckets
// at or below that `le` hold.
func checkFallback(t *testing.T, text []byte, h *dto.Histogram, dp pmetric.ExponentialHistogramDataPoint) {
	t.Helper()
	checkExposition(t, text, false)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	require.NoError(t, err)
	require.Len(t, fams, 1)
	var classic *dto.Histogram
	for _, mf := range fams {
		require.Len(t, mf.Metric, 1)
		classic = mf.Metric[0].Histogram
	}
	require.NotNil(t, classic)
	assert.Equal(t, h.GetSampleCount(), classic.GetSampleCount())
	assert.Equal(t, h.GetSampleSum(), classic.GetSampleSum())

	ph := promHistogram(h)
	require.NoError(t, ph.Validate())
	type bucket struct {
		lo, hi float64 // the values it holds lie in (lo, hi], or [lo, hi) for negatives
		count  uint64
	}
	var bs []bucket
	bounds := map[float64]bool{}
	for it := ph.PositiveBucketIterator(); it.Next(); {
		b := it.At()
		bs = append(bs, bucket{b.Lower, b.Upper, b.Count})
		bounds[b.Upper] = true
	}
	for it := ph.NegativeBucketIterator(); it.Next(); {
		b := it.At()
		lo, hi := math.Min(-math.Abs(b.Lower), -math.Abs(b.Upper)), math.Max(-math.Abs(b.Lower), -math.Abs(b.Upper))
		bs = append(bs, bucket{lo, hi, b.Count})
		bounds[hi] = true
	}
	// Every bound of the schema over dp's range of buckets: OTLP index i
	// is Prometheus index (i >> (scale - schema)) + 1, the bounds of empty
	// buckets included (the fallback writes them, h leaves them out).
	shift := max(dp.Scale()-nativeSchemaMax, 0)
	for sign, side := range map[float64]pmetric.ExponentialHistogramDataPointBuckets{1: dp.Positive(), -1: dp.Negative()} {
		n := side.BucketCounts().Len()
		if n == 0 {
			continue
		}
		lo := (int64(side.Offset()))>>shift + 1
		hi := (int64(side.Offset())+int64(n)-1)>>shift + 1
		all := &histogram.FloatHistogram{Schema: ph.Schema, Count: 1,
			PositiveSpans: []histogram.Span{{Offset: int32(lo - 1), Length: uint32(hi - lo + 2)}}, PositiveBuckets: make([]float64, hi-lo+2)}
		for it := all.PositiveBucketIterator(); it.Next(); {
			b := it.At()
			if sign > 0 {
				bounds[b.Upper] = true
			} else {
				bounds[-b.Upper] = true // a negative bucket's upper end is -(the bound below it)
			}
		}
	}
	zt := ph.ZeroThreshold
	if zt == nativeDefaultZeroThreshold {
		zt = 0 // 0 in OTLP: exact zeros
	}
	bs = append(bs, bucket{-zt, zt, ph.ZeroCount})
	bounds[zt] = true

	les := map[float64]bool{}
	prev := math.Inf(-1)
	for _, cb := range classic.Bucket {
		le := cb.GetUpperBound()
		require.Greater(t, le, prev, "le values increase")
		prev = le
		les[le] = true
		if math.IsInf(le, 1) {
			assert.Equal(t, h.GetSampleCount(), cb.GetCumulativeCount())
			continue
		}
		assert.True(t, bounds[le], "le %g is a bound of the native histogram's buckets", le)
		var want uint64
		for _, b := range bs {
			if b.hi <= le {
				want += b.count
			} else {
				assert.True(t, b.lo >= le || b.count == 0 || b.hi <= zt && b.lo >= -zt,
					"le %g cuts bucket [%g, %g] holding %d", le, b.lo, b.hi, b.count)
			}
		}
		assert.Equal(t, want, cb.GetCumulativeCount(), "cumulative count at le %g", le)
	}
	for _, b := range bs {
		if b.count > 0 && b.hi > zt && !math.IsInf(b.hi, 0) {
			assert.True(t, les[b.hi], "bucket (%g, %g] with %d has no le", b.lo, b.hi, b.count)
		}
	}
}

// TestClassicFallbackBuckets: with native_histograms.classic_fallback, the
// text formats show each exponential histogram as classic buckets at the
// native schema's bounds with exact cumulative counts (checkFallback), for
// hand-made points and random ones (scales -4 to 20, both sides, zero
// thresholds); the OpenMetrics body parses and has the same buckets.
func TestClassicFallbackBuckets(t *testing.T) {
	points := []expPoint{
		{scale: 0, zeroCount: 1, posOffset: -1, pos: []uint64{2, 3}, sum: 7.5},
		{scale: 12, posOffset: -17, pos: []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9}, negOffset: 3, neg: []uint64{1, 1, 1, 1, 1}, sum: 12.25},
		{scale: 3, posOffset: -5, pos: []uint64{1, 0, 2, 7}, negOffset: 2, neg: []uint64{4, 0, 1}, zeroCount: 2, zeroThreshold: 0.001, sum: 3},
		{scale: -4, pos: []uint64{5}, sum: 1e5},
		{scale: 2, zeroCount: 4, sum: 0},
	}
	for _, p := range points {
		text, h := fallbackRender(t, p.build(), false)
		checkFallback(t, text, h, p.build())
		om, _ := fallbackRender(t, p.build(), true)
		checkExposition(t, om, true)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		dp := randomPoint(r)
		text, h := fallbackRender(t, dp, false)
		checkFallback(t, text, h, dp)
		if t.Failed() {
			t.Logf("point: scale %d pos %d%v neg %d%v zero %d/%g", dp.Scale(), dp.Positive().Offset(), dp.Positive().BucketCounts().AsRaw(),
				dp.Negative().Offset(), dp.Negative().BucketCounts().AsRaw(), dp.ZeroCount(), dp.ZeroThreshold())
			return
		}
	}
}

// TestNativeBoundIsPrometheus: nativeBound gives Prometheus' own bucket
// bounds, across schemas and far from index 0.
func TestNativeBoundIsPrometheus(t *testing.T) {
	for schema := int32(nativeSchemaMin); schema <= nativeSchemaMax; schema++ {
		h := &histogram.FloatHistogram{Schema: schema, Count: 1, PositiveSpans: []histogram.Span{{Offset: -300, Length: 600}},
			PositiveBuckets: make([]float64, 600)}
		n := 0
		for it := h.PositiveBucketIterator(); it.Next(); n++ {
			b := it.At()
			if math.IsInf(b.Upper, 1) || b.Upper == math.MaxFloat64 {
				continue
			}
			require.Equal(t, b.Upper, nativeBound(int64(b.Index), schema), "schema %d index %d", schema, b.Index)
		}
		require.Equal(t, 600, n)
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
		body, _ := scrape(t, url, "text/plain;version=0.0.4", true)
		buckets := strings.Count(string(body), "latency_bucket{")
		if on {
			// 4 positive and 3 negative Prometheus buckets (scale 3, the empty ones
			// in the range included), the zero bucket, +Inf.
			assert.Equal(t, 9, buckets, "%s", body)
		} else {
			assert.Equal(t, 1, buckets, "%s", body)
		}
		assert.Contains(t, string(body), `latency_bucket{otel_scope_name="",otel_scope_schema_url="",otel_scope_version="",le="+Inf"} 17`)
		scrape(t, url, acceptProm3Native, true)
		e.renderNow()
		pb, _ := scrape(t, url, acceptProm3Native, true)
		fams := decodeProto(t, pb)
		require.Len(t, fams, 1)
		assert.NotNil(t, fams[0].Metric[0].Histogram.Schema)
		assert.Empty(t, fams[0].Metric[0].Histogram.Bucket)
	}
}

// TestExpHistogramWithoutSumHidden: an exponential histogram whose state
// has no sum (a cumulative point without one, or a sum of deltas one of
// which had none, as the stock exporter's accumulator keeps it) is in no
// body, with or without the classic fallback, and each such point is
// counted as unsupported; a later cumulative point with a sum brings the
// series back.
func TestExpHistogramWithoutSumHidden(t *testing.T) {
	withSum := expPoint{scale: 1, pos: []uint64{2, 1}, sum: 4}
	noSum := expPoint{scale: 1, pos: []uint64{1}, noSum: true}
	for _, tc := range []struct {
		name    string
		batches []pmetric.Metrics
		hidden  bool
		refused int64
	}{
		{"cumulative_without_sum", []pmetric.Metrics{expBatch(false, 0, noSum.build())}, true, 1},
		{"cumulative_sum_again", []pmetric.Metrics{expBatch(false, 0, noSum.build()), expBatch(false, 1, withSum.build())}, false, 1},
		{"delta_without_sum_after_one_with", []pmetric.Metrics{expBatch(true, 0, withSum.build()), expBatch(true, 1, noSum.build())}, true, 1},
		{"delta_with_sum_after_one_without", []pmetric.Metrics{expBatch(true, 0, noSum.build()), expBatch(true, 1, withSum.build())}, true, 1},
		{"deltas_with_sums", []pmetric.Metrics{expBatch(true, 0, withSum.build()), expBatch(true, 1, withSum.build())}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, fallback := range []bool{false, true} {
				cfg := createDefaultConfig().(*Config)
				cfg.NativeHistograms.ClassicFallback = fallback
				cfg.EnableOpenMetrics = true
				s := newSeriesStore(cfg, zap.NewNop())
				for _, b := range tc.batches {
					s.consume(b, time.Now())
				}
				assert.Equal(t, tc.refused, s.takeEvents()[eventUnsupported], "points counted as unsupported")
				rd := &renderer{classicFallback: fallback}
				text, om, pb := rd.renderText(nil, s), rd.renderOpenMetrics(nil, s), rd.renderProto(nil, s)
				served := 0
				for _, mf := range decodeProto(t, pb) {
					served += len(mf.Metric)
				}
				if tc.hidden {
					assert.NotContains(t, string(text), "latency_", "text, fallback %v", fallback)
					assert.NotContains(t, string(om), "latency_", "OpenMetrics, fallback %v", fallback)
					assert.Zero(t, served, "protobuf, fallback %v", fallback)
					continue
				}
				assert.Contains(t, string(text), "latency_count", "text, fallback %v", fallback)
				assert.Contains(t, string(om), "latency_count", "OpenMetrics, fallback %v", fallback)
				assert.Equal(t, 1, served, "protobuf, fallback %v", fallback)
			}
		})
	}
}
