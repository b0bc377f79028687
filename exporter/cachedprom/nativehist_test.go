package cachedprom

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/protobuf/proto"
)

// expPoint describes an exponential histogram point compactly.
type expPoint struct {
	scale         int32
	zeroCount     uint64
	zeroThreshold float64
	posOffset     int32
	pos           []uint64
	negOffset     int32
	neg           []uint64
	sum           float64
	noSum         bool
	extraCount    uint64 // count above the population (NaN sums allow it)
	exemplars     []expExemplar
}

type expExemplar struct {
	value   float64
	ts      time.Time
	traceID pcommon.TraceID
	spanID  pcommon.SpanID
}

var (
	nhStart = time.Unix(1_700_000_000, 250_000_000).UTC()
	nhTS    = nhStart.Add(time.Minute)
)

func (p expPoint) build() pmetric.ExponentialHistogramDataPoint {
	dp := pmetric.NewExponentialHistogramDataPoint()
	dp.SetScale(p.scale)
	dp.SetZeroCount(p.zeroCount)
	dp.SetZeroThreshold(p.zeroThreshold)
	dp.Positive().SetOffset(p.posOffset)
	dp.Positive().BucketCounts().FromRaw(p.pos)
	dp.Negative().SetOffset(p.negOffset)
	dp.Negative().BucketCounts().FromRaw(p.neg)
	count := p.zeroCount + p.extraCount
	for _, c := range p.pos {
		count += c
	}
	for _, c := range p.neg {
		count += c
	}
	dp.SetCount(count)
	if !p.noSum {
		dp.SetSum(p.sum)
	}
	dp.SetStartTimestamp(pcommon.NewTimestampFromTime(nhStart))
	dp.SetTimestamp(pcommon.NewTimestampFromTime(nhTS))
	for _, x := range p.exemplars {
		e := dp.Exemplars().AppendEmpty()
		e.SetDoubleValue(x.value)
		if !x.ts.IsZero() {
			e.SetTimestamp(pcommon.NewTimestampFromTime(x.ts))
		}
		e.SetTraceID(x.traceID)
		e.SetSpanID(x.spanID)
	}
	return dp
}

// nhGolden is one oracle case. The Prometheus buckets are written out by
// hand from the bucket definitions (OTLP bucket i covers (b^i, b^(i+1)],
// Prometheus bucket k covers (b^(k-1), b^k]), so the oracle does not share
// the index arithmetic under test.
type nhGolden struct {
	name          string
	point         expPoint
	schema        int32
	zeroThreshold float64
	pos, neg      map[int]int64
}

var nhGoldens = []nhGolden{
	{
		// (0.5,1] and (1,2] at base 2: OTLP -1 and 0, Prometheus 0 and 1.
		name:   "scale0_offset_minus1",
		point:  expPoint{scale: 0, zeroCount: 1, posOffset: -1, pos: []uint64{2, 3}, sum: 7.5},
		schema: 0, zeroThreshold: nativeDefaultZeroThreshold,
		pos: map[int]int64{0: 2, 1: 3},
	},
	{
		// Scale 10 to 8 merges 4 OTLP buckets: OTLP -5 is in the group
		// -8..-5 (Prometheus -2+1), -4..-1 in -1 (+1 = 0), 0..3 in 0 (+1 = 1).
		name: "scale10_downscaled_to_8",
		point: expPoint{
			scale: 10, posOffset: -5, pos: []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9},
			negOffset: 3, neg: []uint64{1, 1, 1, 1, 1}, sum: 12.25,
		},
		schema: 8, zeroThreshold: nativeDefaultZeroThreshold,
		pos: map[int]int64{-1: 1, 0: 14, 1: 30},
		// OTLP 3 is in group 0..3 (Prometheus 1), 4..7 in group 1 (Prometheus 2).
		neg: map[int]int64{1: 1, 2: 4},
	},
	{
		// Scale 12 to 8 merges 16: OTLP -17 is in -32..-17 (group -2),
		// -16..-1 in group -1, so floor, not truncation toward zero.
		name:   "scale12_negative_indexes_floor",
		point:  expPoint{scale: 12, posOffset: -17, pos: []uint64{5, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 3}, sum: 3},
		schema: 8, zeroThreshold: nativeDefaultZeroThreshold,
		pos: map[int]int64{-1: 5, 0: 1 + 2, 1: 3},
	},
	{
		// OTLP 0, 2, 5, 9, 14 with counts; Prometheus 1, 3, 6, 10, 15:
		// gaps of 1 and 2 stay in the span, gaps of 3 and 4 start new ones.
		name:   "gaps_several_spans",
		point:  expPoint{scale: 2, posOffset: 0, pos: []uint64{1, 0, 2, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 0, 5}, sum: 100},
		schema: 2, zeroThreshold: nativeDefaultZeroThreshold,
		pos: map[int]int64{1: 1, 3: 2, 6: 3, 10: 4, 15: 5},
	},
	{
		// Empty buckets at the ends are not buckets.
		name:   "leading_trailing_empty",
		point:  expPoint{scale: 3, posOffset: -4, pos: []uint64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0}, sum: 1},
		schema: 3, zeroThreshold: nativeDefaultZeroThreshold,
		pos: map[int]int64{26: 7},
	},
	{
		// Negative buckets only: OTLP -3 and 1 (|v| in (2^-1.5, 2^-1] and
		// (2^0.5, 2]) are Prometheus -2 and 2, 3 empty buckets apart.
		name:   "negative_only",
		point:  expPoint{scale: 1, negOffset: -3, neg: []uint64{4, 0, 0, 0, 1}, sum: -3.5},
		schema: 1, zeroThreshold: nativeDefaultZeroThreshold,
		neg: map[int]int64{-2: 4, 2: 1},
	},
	{
		name: "zero_bucket_and_both_sides",
		point: expPoint{
			scale: -2, zeroCount: 5, zeroThreshold: 0.001,
			posOffset: 1, pos: []uint64{3, 0, 1}, negOffset: -2, neg: []uint64{2}, sum: 40,
		},
		schema: -2, zeroThreshold: 0.001,
		pos: map[int]int64{2: 3, 4: 1},
		neg: map[int]int64{-1: 2},
	},
	{
		name:   "only_zero_count",
		point:  expPoint{scale: 5, zeroCount: 7},
		schema: 5, zeroThreshold: nativeDefaultZeroThreshold,
	},
	{
		name:   "empty",
		point:  expPoint{scale: 0},
		schema: 0, zeroThreshold: nativeDefaultZeroThreshold,
	},
	{
		name:   "scale_minus4",
		point:  expPoint{scale: -4, posOffset: -1, pos: []uint64{1, 1}, sum: 70000},
		schema: -4, zeroThreshold: nativeDefaultZeroThreshold,
		pos: map[int]int64{0: 1, 1: 1},
	},
	{
		name: "exemplars",
		point: expPoint{
			scale: 0, posOffset: 0, pos: []uint64{1, 1}, sum: 3.5,
			exemplars: []expExemplar{
				{value: 1.5, ts: nhTS.Add(-time.Second), traceID: pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, spanID: pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8}},
				{value: 2, ts: nhTS.Add(-2 * time.Second), traceID: pcommon.TraceID{0xff, 1}},
				{value: 3.25, ts: nhTS.Add(-3 * time.Second)},
			},
		},
		schema: 0, zeroThreshold: nativeDefaultZeroThreshold,
		pos: map[int]int64{1: 1, 2: 1},
	},
}

// oracleHistogram builds the case with client_golang's
// NewConstNativeHistogram (and NewMetricWithExemplars), the contrib
// prometheus exporter's path.
func oracleHistogram(t *testing.T, g nhGolden, dp pmetric.ExponentialHistogramDataPoint) *dto.Metric {
	t.Helper()
	desc := prometheus.NewDesc("h", "help", nil, nil)
	m, err := prometheus.NewConstNativeHistogram(desc, dp.Count(), dp.Sum(), g.pos, g.neg, dp.ZeroCount(), g.schema, g.zeroThreshold, nhStart)
	require.NoError(t, err)
	if len(g.point.exemplars) > 0 {
		var exs []prometheus.Exemplar
		for _, x := range g.point.exemplars {
			l := prometheus.Labels{}
			if !x.traceID.IsEmpty() {
				l["trace_id"] = x.traceID.String()
			}
			if !x.spanID.IsEmpty() {
				l["span_id"] = x.spanID.String()
			}
			exs = append(exs, prometheus.Exemplar{Value: x.value, Labels: l, Timestamp: x.ts})
		}
		m, err = prometheus.NewMetricWithExemplars(m, exs...)
		require.NoError(t, err)
	}
	out := &dto.Metric{}
	require.NoError(t, m.Write(out))
	// client_golang adds exemplar labels in map order.
	for _, e := range out.GetHistogram().GetExemplars() {
		slices.SortFunc(e.Label, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	}
	return out
}

// delimited writes a one-histogram family through expfmt's delimited
// protobuf encoder, the scrape format, and returns the bytes and the family
// decoded back.
func delimited(t *testing.T, h *dto.Histogram) ([]byte, *dto.MetricFamily) {
	t.Helper()
	mf := &dto.MetricFamily{
		Name: proto.String("h"), Help: proto.String("help"), Type: dto.MetricType_HISTOGRAM.Enum(),
		Metric: []*dto.Metric{{Histogram: h}},
	}
	var buf bytes.Buffer
	require.NoError(t, expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeProtoDelim)).Encode(mf))
	got := &dto.MetricFamily{}
	require.NoError(t, expfmt.NewDecoder(bytes.NewReader(buf.Bytes()), expfmt.NewFormat(expfmt.TypeProtoDelim)).Decode(got))
	return buf.Bytes(), got
}

func TestNativeHistogramMatchesClientGolang(t *testing.T) {
	for _, g := range nhGoldens {
		t.Run(g.name, func(t *testing.T) {
			dp := g.point.build()
			got, err := nativeHistogram(dp)
			require.NoError(t, err)
			want := oracleHistogram(t, g, dp)

			gotBytes, gotMF := delimited(t, got)
			wantBytes, wantMF := delimited(t, want.GetHistogram())
			assert.True(t, proto.Equal(wantMF, gotMF), "want %v\n got %v", wantMF, gotMF)
			assert.Equal(t, wantBytes, gotBytes)
		})
	}
}

func TestNativeHistogramSpansAndDeltas(t *testing.T) {
	// The layout spelled out once, for a reader: Prometheus 1, 3, 6, 10, 15.
	got, err := nativeHistogram(nhGoldens[3].point.build())
	require.NoError(t, err)
	var spans [][2]int64
	for _, s := range got.GetPositiveSpan() {
		spans = append(spans, [2]int64{int64(s.GetOffset()), int64(s.GetLength())})
	}
	assert.Equal(t, [][2]int64{{1, 6}, {3, 1}, {4, 1}}, spans)
	assert.Equal(t, []int64{1, -1, 2, -2, 0, 3, 1, 1}, got.GetPositiveDelta())
	assert.Empty(t, got.GetNegativeSpan())
}

func TestNativeHistogramRefusesWhatClientGolangRefuses(t *testing.T) {
	desc := prometheus.NewDesc("h", "help", nil, nil)
	for _, tc := range []struct {
		name  string
		point expPoint
		want  error
	}{
		{"scale_minus5", expPoint{scale: -5, posOffset: 0, pos: []uint64{1}, sum: 1}, errNativeScale},
		{"custom_buckets_scale", expPoint{scale: -53, pos: []uint64{1}, sum: 1}, errNativeScale},
		{"count_above_population", expPoint{scale: 0, pos: []uint64{1}, sum: 1, extraCount: 2}, errNativePopulation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dp := tc.point.build()
			h, err := nativeHistogram(dp)
			require.ErrorIs(t, err, tc.want)
			assert.Nil(t, h)
			_, err = prometheus.NewConstNativeHistogram(desc, dp.Count(), dp.Sum(), map[int]int64{1: 1}, nil, 0, dp.Scale(), 0, nhStart)
			assert.Error(t, err, "client_golang takes it")
		})
	}

	// client_golang takes any float as the sum; the stock exporter refuses
	// a point that has none (TestNativeHistogramSameBucketsAsStockExporter).
	t.Run("no_sum", func(t *testing.T) {
		h, err := nativeHistogram(expPoint{scale: 0, pos: []uint64{1}, noSum: true}.build())
		require.ErrorIs(t, err, errNativeNoSum)
		assert.Nil(t, h)
	})
	t.Run("count_below_population", func(t *testing.T) {
		dp := expPoint{scale: 0, pos: []uint64{3}, sum: 1}.build()
		dp.SetCount(2)
		_, err := nativeHistogram(dp)
		require.ErrorIs(t, err, errNativePopulation)
	})
	t.Run("nan_sum_allows_more_observations", func(t *testing.T) {
		dp := expPoint{scale: 0, pos: []uint64{3}, sum: math.NaN(), extraCount: 2}.build()
		h, err := nativeHistogram(dp)
		require.NoError(t, err)
		assert.Equal(t, uint64(5), h.GetSampleCount())
		assert.True(t, math.IsNaN(h.GetSampleSum()))
		dp.SetCount(2)
		_, err = nativeHistogram(dp)
		require.ErrorIs(t, err, errNativePopulation)
	})
	t.Run("index_beyond_int32", func(t *testing.T) {
		dp := expPoint{scale: 0, posOffset: math.MaxInt32 - 1, pos: []uint64{1, 1}, sum: 1}.build()
		_, err := nativeHistogram(dp)
		require.ErrorIs(t, err, errNativeRange)
	})
	t.Run("count_beyond_int64", func(t *testing.T) {
		dp := expPoint{scale: 0, pos: []uint64{math.MaxInt64 + 1}, sum: 1}.build()
		_, err := nativeHistogram(dp)
		require.ErrorIs(t, err, errNativeRange)
	})
	t.Run("bucket_total_overflows", func(t *testing.T) {
		dp := expPoint{scale: 0, pos: []uint64{math.MaxUint64, 2}, sum: 1}.build()
		_, err := nativeHistogram(dp)
		require.ErrorIs(t, err, errNativeRange)
	})
}

func TestNativeHistogramTimestampsAndExemplars(t *testing.T) {
	t.Run("no_start_no_created", func(t *testing.T) {
		dp := expPoint{scale: 0, pos: []uint64{1}, sum: 1}.build()
		dp.SetStartTimestamp(0)
		h, err := nativeHistogram(dp)
		require.NoError(t, err)
		assert.Nil(t, h.GetCreatedTimestamp())
	})
	t.Run("created_from_start", func(t *testing.T) {
		h, err := nativeHistogram(expPoint{scale: 0, pos: []uint64{1}, sum: 1}.build())
		require.NoError(t, err)
		assert.Equal(t, nhStart, h.GetCreatedTimestamp().AsTime())
	})
	t.Run("exemplar_labels_and_timestamp_fallback", func(t *testing.T) {
		dp := expPoint{scale: 0, pos: []uint64{1}, sum: 1}.build()
		e := dp.Exemplars().AppendEmpty()
		e.SetIntValue(7)
		e.SetTraceID(pcommon.TraceID{0xab, 0xcd})
		e.SetSpanID(pcommon.SpanID{0xef})
		h, err := nativeHistogram(dp)
		require.NoError(t, err)
		require.Len(t, h.GetExemplars(), 1)
		x := h.GetExemplars()[0]
		assert.Equal(t, 7.0, x.GetValue())
		assert.Equal(t, nhTS, x.GetTimestamp().AsTime(), "the point's timestamp")
		var names, values []string
		for _, l := range x.GetLabel() {
			names = append(names, l.GetName())
			values = append(values, l.GetValue())
		}
		assert.Equal(t, []string{"span_id", "trace_id"}, names)
		assert.Equal(t, []string{"ef00000000000000", "abcd0000000000000000000000000000"}, values)
	})
}

// promHistogram converts the protobuf form to Prometheus' in-memory form, so
// Prometheus' own code checks it and computes bucket bounds.
func promHistogram(h *dto.Histogram) *histogram.Histogram {
	spans := func(in []*dto.BucketSpan) []histogram.Span {
		var out []histogram.Span
		for _, s := range in {
			out = append(out, histogram.Span{Offset: s.GetOffset(), Length: s.GetLength()})
		}
		return out
	}
	return &histogram.Histogram{
		Schema:          h.GetSchema(),
		ZeroThreshold:   h.GetZeroThreshold(),
		ZeroCount:       h.GetZeroCount(),
		Count:           h.GetSampleCount(),
		Sum:             h.GetSampleSum(),
		PositiveSpans:   spans(h.GetPositiveSpan()),
		PositiveBuckets: h.GetPositiveDelta(),
		NegativeSpans:   spans(h.GetNegativeSpan()),
		NegativeBuckets: h.GetNegativeDelta(),
	}
}

// checkNativeProperties checks a mapped histogram against its point with
// Prometheus' code: it validates, its count is its zero count plus its
// buckets, and every OTLP bucket's count is in the Prometheus bucket whose
// bounds contain the OTLP bucket's, each Prometheus bucket holding exactly
// what landed in it.
func checkNativeProperties(t *testing.T, dp pmetric.ExponentialHistogramDataPoint, got *dto.Histogram) {
	t.Helper()
	ph := promHistogram(got)
	require.NoError(t, ph.Validate())

	total := ph.ZeroCount
	type side struct {
		otel    pmetric.ExponentialHistogramDataPointBuckets
		buckets map[int32]histogram.Bucket[uint64]
	}
	sides := []side{{dp.Positive(), map[int32]histogram.Bucket[uint64]{}}, {dp.Negative(), map[int32]histogram.Bucket[uint64]{}}}
	for i, it := range []histogram.BucketIterator[uint64]{ph.PositiveBucketIterator(), ph.NegativeBucketIterator()} {
		for it.Next() {
			b := it.At()
			total += b.Count
			if b.Count > 0 {
				sides[i].buckets[b.Index] = b
			}
		}
	}
	assert.Equal(t, dp.Count(), total, "count = zero count + buckets")
	assert.Equal(t, dp.ZeroCount(), ph.ZeroCount)

	landed := map[int32]uint64{}
	for si, s := range sides {
		clear(landed)
		counts := s.otel.BucketCounts()
		for i := 0; i < counts.Len(); i++ {
			c := counts.At(i)
			if c == 0 {
				continue
			}
			idx := float64(s.otel.Offset()) + float64(i)
			width := math.Exp2(-float64(dp.Scale()))
			lo, hi := math.Exp2(idx*width), math.Exp2((idx+1)*width)
			found := false
			for k, b := range s.buckets {
				plo, phi := b.Lower, b.Upper
				if si == 1 {
					plo, phi = -b.Upper, -b.Lower
				}
				if plo <= lo*(1+1e-12) && hi <= phi*(1+1e-12) {
					require.False(t, found, "OTLP bucket %d fits two Prometheus buckets", i)
					found = true
					landed[k] += c
				}
			}
			require.True(t, found, "OTLP bucket %d (%g, %g] (side %d) is in no Prometheus bucket", int(idx), lo, hi, si)
		}
		for k, b := range s.buckets {
			assert.Equal(t, b.Count, landed[k], "Prometheus bucket %d (side %d)", k, si)
		}
	}
}

// randomPoint draws a point whose bucket bounds stay finite in float64.
func randomPoint(r *rand.Rand) pmetric.ExponentialHistogramDataPoint {
	scale := int32(r.IntN(25)) - 4 // -4..20
	// |index| * 2^-scale below ~900 keeps 2^bound finite.
	limit := int64(math.Min(900*math.Exp2(float64(scale)), 1<<30))
	side := func() (int32, []uint64) {
		n := r.IntN(40)
		if n == 0 {
			return 0, nil
		}
		off := int32(r.Int64N(2*limit-int64(n)) - limit)
		counts := make([]uint64, n)
		for i := range counts {
			if r.IntN(3) > 0 {
				counts[i] = uint64(r.IntN(1000))
			}
		}
		return off, counts
	}
	p := expPoint{scale: scale, sum: r.Float64() * 100}
	p.posOffset, p.pos = side()
	p.negOffset, p.neg = side()
	if r.IntN(2) == 0 {
		p.zeroCount = uint64(r.IntN(50))
	}
	if r.IntN(3) == 0 {
		p.zeroThreshold = math.Exp2(-float64(r.IntN(100)))
	}
	return p.build()
}

func TestNativeHistogramProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		dp := randomPoint(r)
		got, err := nativeHistogram(dp)
		require.NoError(t, err)
		checkNativeProperties(t, dp, got)
		if t.Failed() {
			t.Logf("point: scale %d pos %d %v neg %d %v", dp.Scale(), dp.Positive().Offset(), dp.Positive().BucketCounts().AsRaw(), dp.Negative().Offset(), dp.Negative().BucketCounts().AsRaw())
			return
		}
	}
}

// FuzzNativeHistogram checks the same properties for arbitrary points; the
// seeds run as a normal test, `go test -fuzz=FuzzNativeHistogram` explores.
func FuzzNativeHistogram(f *testing.F) {
	f.Add(int8(0), int16(-1), []byte{2, 3}, int16(0), []byte{}, uint8(1))
	f.Add(int8(10), int16(-5), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, int16(3), []byte{1, 1, 1, 1, 1}, uint8(0))
	f.Add(int8(20), int16(-300), []byte{1, 0, 0, 0, 0, 0, 9}, int16(-1), []byte{0, 0, 5}, uint8(0))
	f.Add(int8(-4), int16(50), []byte{0, 0, 7}, int16(-50), []byte{4}, uint8(3))
	f.Add(int8(2), int16(0), []byte{1, 0, 2, 0, 0, 3, 0, 0, 0, 4}, int16(0), []byte{}, uint8(9))
	f.Fuzz(func(t *testing.T, scale int8, posOff int16, pos []byte, negOff int16, neg []byte, zero uint8) {
		if scale < -4 || scale > 20 {
			t.Skip("scale outside OTLP's -4..20 is refused (tested above)")
		}
		// Keep bucket bounds finite in float64 for the containment check.
		limit := 900 * math.Exp2(float64(scale))
		if math.Abs(float64(posOff))+float64(len(pos)) > limit || math.Abs(float64(negOff))+float64(len(neg)) > limit {
			t.Skip("bounds overflow float64")
		}
		toCounts := func(b []byte) []uint64 {
			out := make([]uint64, len(b))
			for i, c := range b {
				out[i] = uint64(c)
			}
			return out
		}
		dp := expPoint{
			scale: int32(scale), zeroCount: uint64(zero), posOffset: int32(posOff), pos: toCounts(pos),
			negOffset: int32(negOff), neg: toCounts(neg), sum: 1,
		}.build()
		got, err := nativeHistogram(dp)
		require.NoError(t, err)
		checkNativeProperties(t, dp, got)
	})
}

// nativeBucketMap expands one side's spans and deltas into index -> count,
// leaving out empty buckets.
func nativeBucketMap(spans []*dto.BucketSpan, deltas []int64) map[int64]int64 {
	out := map[int64]int64{}
	var idx, count int64
	d := 0
	for i, s := range spans {
		if i == 0 {
			idx = int64(s.GetOffset())
		} else {
			idx += int64(s.GetOffset())
		}
		for range s.GetLength() {
			count += deltas[d]
			d++
			if count != 0 {
				out[idx] = count
			}
			idx++
		}
	}
	return out
}

// TestNativeHistogramSameBucketsAsStockExporter feeds the golden points to
// the contrib prometheus exporter, scrapes its protobuf exposition, and
// requires the same histogram: schema, zero bucket, count, sum, created
// timestamp, bucket contents and exemplars (every golden exemplar has a
// timestamp: for one without, see TestNativeExemplarsBesideStockExporter).
// The layout is not compared: the stock exporter writes OTLP's empty
// buckets as explicit zeros. A point without a sum is served by neither.
func TestNativeHistogramSameBucketsAsStockExporter(t *testing.T) {
	stock, url := startStock(t, nil)
	md := pmetric.NewMetrics()
	ms := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics()
	add := func(name, help string, p expPoint) {
		m := ms.AppendEmpty()
		m.SetName(name)
		m.SetDescription(help)
		eh := m.SetEmptyExponentialHistogram()
		eh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		p.build().CopyTo(eh.DataPoints().AppendEmpty())
	}
	for i, g := range nhGoldens {
		add("nh_golden_"+string(rune('a'+i)), g.name, g.point)
	}
	noSum := expPoint{scale: -4, posOffset: -1, pos: []uint64{1, 1}, noSum: true}
	add("nh_no_sum", "no_sum", noSum)
	require.NoError(t, stock.ConsumeMetrics(t.Context(), md))

	body, _ := scrape(t, url, `application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited`, false)
	dec := expfmt.NewDecoder(bytes.NewReader(body), expfmt.NewFormat(expfmt.TypeProtoDelim))
	stockByHelp := map[string]*dto.Histogram{}
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err != nil {
			break
		}
		if strings.HasPrefix(mf.GetName(), "nh_") {
			require.Len(t, mf.GetMetric(), 1)
			stockByHelp[mf.GetHelp()] = mf.GetMetric()[0].GetHistogram()
		}
	}
	require.Len(t, stockByHelp, len(nhGoldens), "the stock exporter served every golden case, and not the point without a sum")
	require.NotContains(t, stockByHelp, "no_sum")
	_, err := nativeHistogram(noSum.build())
	require.ErrorIs(t, err, errNativeNoSum)

	for _, g := range nhGoldens {
		t.Run(g.name, func(t *testing.T) {
			want := stockByHelp[g.name]
			require.NotNil(t, want)
			got, err := nativeHistogram(g.point.build())
			require.NoError(t, err)
			assert.Equal(t, want.GetSchema(), got.GetSchema(), "schema")
			assert.Equal(t, want.GetZeroThreshold(), got.GetZeroThreshold(), "zero threshold")
			assert.Equal(t, want.GetZeroCount(), got.GetZeroCount(), "zero count")
			assert.Equal(t, want.GetSampleCount(), got.GetSampleCount(), "count")
			assert.Equal(t, want.GetSampleSum(), got.GetSampleSum(), "sum")
			assert.Equal(t, want.GetCreatedTimestamp().AsTime(), got.GetCreatedTimestamp().AsTime(), "created")
			assert.Equal(t, nativeBucketMap(want.GetPositiveSpan(), want.GetPositiveDelta()), nativeBucketMap(got.GetPositiveSpan(), got.GetPositiveDelta()), "positive buckets")
			assert.Equal(t, nativeBucketMap(want.GetNegativeSpan(), want.GetNegativeDelta()), nativeBucketMap(got.GetNegativeSpan(), got.GetNegativeDelta()), "negative buckets")
			assert.Equal(t, exemplarStrings(want.GetExemplars()), exemplarStrings(got.GetExemplars()), "exemplars")
		})
	}
}

// exemplarStrings describes exemplars as sorted "value@time{labels}"
// strings: the stock exporter writes exemplar labels in map order, and the
// order of a native histogram's exemplars means nothing.
func exemplarStrings(exs []*dto.Exemplar) []string {
	var out []string
	for _, e := range exs {
		var lbls []string
		for _, l := range e.GetLabel() {
			lbls = append(lbls, l.GetName()+"="+l.GetValue())
		}
		slices.Sort(lbls)
		out = append(out, fmt.Sprintf("%g@%s{%s}", e.GetValue(), e.GetTimestamp().AsTime().Format(time.RFC3339Nano), strings.Join(lbls, ",")))
	}
	slices.Sort(out)
	return out
}
