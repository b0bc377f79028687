package render

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"
)

// fallbackRender renders one cumulative exponential histogram point with
// the fallback on: the text body and the native histogram of the protobuf
// body.
func fallbackRender(t *testing.T, dp pmetric.ExponentialHistogramDataPoint, om bool) ([]byte, *dto.Histogram) {
	t.Helper()
	s := testStore(func(o *store.Options) { o.Exemplars = om }, promtest.ExpBatch(false, 0, dp))
	t.Cleanup(s.Close)
	rd := New(Options{ClassicFallback: true})
	text := rd.Text(nil, s)
	if om {
		text = rd.OpenMetrics(nil, s)
	}
	fams := promtest.DecodeProto(t, rd.Proto(nil, s))
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
	promtest.CheckExposition(t, text, false)
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
	points := []promtest.ExpPoint{
		{Scale: 0, ZeroCount: 1, PosOffset: -1, Pos: []uint64{2, 3}, Sum: 7.5},
		{Scale: 12, PosOffset: -17, Pos: []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9}, NegOffset: 3, Neg: []uint64{1, 1, 1, 1, 1}, Sum: 12.25},
		{Scale: 3, PosOffset: -5, Pos: []uint64{1, 0, 2, 7}, NegOffset: 2, Neg: []uint64{4, 0, 1}, ZeroCount: 2, ZeroThreshold: 0.001, Sum: 3},
		{Scale: -4, Pos: []uint64{5}, Sum: 1e5},
		{Scale: 2, ZeroCount: 4, Sum: 0},
	}
	for _, p := range points {
		text, h := fallbackRender(t, p.Build(), false)
		checkFallback(t, text, h, p.Build())
		om, _ := fallbackRender(t, p.Build(), true)
		promtest.CheckExposition(t, om, true)
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

// TestExpHistogramWithoutSumHidden: an exponential histogram whose state
// has no sum (a cumulative point without one, or a sum of deltas one of
// which had none, as the stock exporter's accumulator keeps it) is in no
// body, with or without the classic fallback, and each such point is
// counted as unsupported; a later cumulative point with a sum brings the
// series back.
func TestExpHistogramWithoutSumHidden(t *testing.T) {
	withSum := promtest.ExpPoint{Scale: 1, Pos: []uint64{2, 1}, Sum: 4}
	noSum := promtest.ExpPoint{Scale: 1, Pos: []uint64{1}, NoSum: true}
	for _, tc := range []struct {
		name    string
		batches []pmetric.Metrics
		hidden  bool
		refused int64
	}{
		{"cumulative_without_sum", []pmetric.Metrics{promtest.ExpBatch(false, 0, noSum.Build())}, true, 1},
		{"cumulative_sum_again", []pmetric.Metrics{promtest.ExpBatch(false, 0, noSum.Build()), promtest.ExpBatch(false, 1, withSum.Build())}, false, 1},
		{"delta_without_sum_after_one_with", []pmetric.Metrics{promtest.ExpBatch(true, 0, withSum.Build()), promtest.ExpBatch(true, 1, noSum.Build())}, true, 1},
		{"delta_with_sum_after_one_without", []pmetric.Metrics{promtest.ExpBatch(true, 0, noSum.Build()), promtest.ExpBatch(true, 1, withSum.Build())}, true, 1},
		{"deltas_with_sums", []pmetric.Metrics{promtest.ExpBatch(true, 0, withSum.Build()), promtest.ExpBatch(true, 1, withSum.Build())}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, fallback := range []bool{false, true} {
				s := testStore(func(o *store.Options) { o.Exemplars = true }, tc.batches...)
				assert.Equal(t, tc.refused, s.TakeEvents()[store.EventUnsupported], "points counted as unsupported")
				rd := New(Options{ClassicFallback: fallback})
				text, om, pb := rd.Text(nil, s), rd.OpenMetrics(nil, s), rd.Proto(nil, s)
				s.Close()
				served := 0
				for _, mf := range promtest.DecodeProto(t, pb) {
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
