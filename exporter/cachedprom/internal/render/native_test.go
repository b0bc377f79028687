package render

import (
	"bytes"
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

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
)

// nhGolden is one oracle case. The Prometheus buckets are written out by
// hand from the bucket definitions (OTLP bucket i covers (b^i, b^(i+1)],
// Prometheus bucket k covers (b^(k-1), b^k]), so the oracle does not share
// the index arithmetic under test.
type nhGolden struct {
	name          string
	point         promtest.ExpPoint
	schema        int32
	zeroThreshold float64
	pos, neg      map[int]int64
}

var nhGoldens = []nhGolden{
	{
		// (0.5,1] and (1,2] at base 2: OTLP -1 and 0, Prometheus 0 and 1.
		name:   "scale0_offset_minus1",
		point:  promtest.ExpPoint{Scale: 0, ZeroCount: 1, PosOffset: -1, Pos: []uint64{2, 3}, Sum: 7.5},
		schema: 0, zeroThreshold: nativeDefaultZeroThreshold,
		pos: map[int]int64{0: 2, 1: 3},
	},
	{
		// Scale 10 to 8 merges 4 OTLP buckets: OTLP -5 is in the group
		// -8..-5 (Prometheus -2+1), -4..-1 in -1 (+1 = 0), 0..3 in 0 (+1 = 1).
		name: "scale10_downscaled_to_8",
		point: promtest.ExpPoint{
			Scale: 10, PosOffset: -5, Pos: []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9},
			NegOffset: 3, Neg: []uint64{1, 1, 1, 1, 1}, Sum: 12.25,
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
		point:  promtest.ExpPoint{Scale: 12, PosOffset: -17, Pos: []uint64{5, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 3}, Sum: 3},
		schema: 8, zeroThreshold: nativeDefaultZeroThreshold,
		pos: map[int]int64{-1: 5, 0: 1 + 2, 1: 3},
	},
	{
		// OTLP 0, 2, 5, 9, 14 with counts; Prometheus 1, 3, 6, 10, 15:
		// gaps of 1 and 2 stay in the span, gaps of 3 and 4 start new ones.
		name:   "gaps_several_spans",
		point:  promtest.ExpPoint{Scale: 2, PosOffset: 0, Pos: []uint64{1, 0, 2, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 0, 5}, Sum: 100},
		schema: 2, zeroThreshold: nativeDefaultZeroThreshold,
		pos: map[int]int64{1: 1, 3: 2, 6: 3, 10: 4, 15: 5},
	},
	{
		// Empty buckets at the ends are not buckets.
		name:   "leading_trailing_empty",
		point:  promtest.ExpPoint{Scale: 3, PosOffset: -4, Pos: []uint64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0}, Sum: 1},
		schema: 3, zeroThreshold: nativeDefaultZeroThreshold,
		pos: map[int]int64{26: 7},
	},
	{
		// Negative buckets only: OTLP -3 and 1 (|v| in (2^-1.5, 2^-1] and
		// (2^0.5, 2]) are Prometheus -2 and 2, 3 empty buckets apart.
		name:   "negative_only",
		point:  promtest.ExpPoint{Scale: 1, NegOffset: -3, Neg: []uint64{4, 0, 0, 0, 1}, Sum: -3.5},
		schema: 1, zeroThreshold: nativeDefaultZeroThreshold,
		neg: map[int]int64{-2: 4, 2: 1},
	},
	{
		name: "zero_bucket_and_both_sides",
		point: promtest.ExpPoint{
			Scale: -2, ZeroCount: 5, ZeroThreshold: 0.001,
			PosOffset: 1, Pos: []uint64{3, 0, 1}, NegOffset: -2, Neg: []uint64{2}, Sum: 40,
		},
		schema: -2, zeroThreshold: 0.001,
		pos: map[int]int64{2: 3, 4: 1},
		neg: map[int]int64{-1: 2},
	},
	{
		name:   "only_zero_count",
		point:  promtest.ExpPoint{Scale: 5, ZeroCount: 7},
		schema: 5, zeroThreshold: nativeDefaultZeroThreshold,
	},
	{
		name:   "empty",
		point:  promtest.ExpPoint{Scale: 0},
		schema: 0, zeroThreshold: nativeDefaultZeroThreshold,
	},
	{
		name:   "scale_minus4",
		point:  promtest.ExpPoint{Scale: -4, PosOffset: -1, Pos: []uint64{1, 1}, Sum: 70000},
		schema: -4, zeroThreshold: nativeDefaultZeroThreshold,
		pos: map[int]int64{0: 1, 1: 1},
	},
	{
		name: "exemplars",
		point: promtest.ExpPoint{
			Scale: 0, PosOffset: 0, Pos: []uint64{1, 1}, Sum: 3.5,
			Exemplars: []promtest.ExpExemplar{
				{Value: 1.5, TS: promtest.NHTS.Add(-time.Second), TraceID: pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, SpanID: pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8}},
				{Value: 2, TS: promtest.NHTS.Add(-2 * time.Second), TraceID: pcommon.TraceID{0xff, 1}},
				{Value: 3.25, TS: promtest.NHTS.Add(-3 * time.Second)},
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
	m, err := prometheus.NewConstNativeHistogram(desc, dp.Count(), dp.Sum(), g.pos, g.neg, dp.ZeroCount(), g.schema, g.zeroThreshold, promtest.NHStart)
	require.NoError(t, err)
	if len(g.point.Exemplars) > 0 {
		var exs []prometheus.Exemplar
		for _, x := range g.point.Exemplars {
			l := prometheus.Labels{}
			if !x.TraceID.IsEmpty() {
				l["trace_id"] = x.TraceID.String()
			}
			if !x.SpanID.IsEmpty() {
				l["span_id"] = x.SpanID.String()
			}
			exs = append(exs, prometheus.Exemplar{Value: x.Value, Labels: l, Timestamp: x.TS})
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
			dp := g.point.Build()
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
	got, err := nativeHistogram(nhGoldens[3].point.Build())
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
		point promtest.ExpPoint
		want  error
	}{
		{"scale_minus5", promtest.ExpPoint{Scale: -5, PosOffset: 0, Pos: []uint64{1}, Sum: 1}, errNativeScale},
		{"custom_buckets_scale", promtest.ExpPoint{Scale: -53, Pos: []uint64{1}, Sum: 1}, errNativeScale},
		{"count_above_population", promtest.ExpPoint{Scale: 0, Pos: []uint64{1}, Sum: 1, ExtraCount: 2}, errNativePopulation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dp := tc.point.Build()
			h, err := nativeHistogram(dp)
			require.ErrorIs(t, err, tc.want)
			assert.Nil(t, h)
			_, err = prometheus.NewConstNativeHistogram(desc, dp.Count(), dp.Sum(), map[int]int64{1: 1}, nil, 0, dp.Scale(), 0, promtest.NHStart)
			assert.Error(t, err, "client_golang takes it")
		})
	}

	// client_golang takes any float as the sum; the stock exporter refuses
	// a point that has none (TestNativeHistogramSameBucketsAsStockExporter).
	t.Run("no_sum", func(t *testing.T) {
		h, err := nativeHistogram(promtest.ExpPoint{Scale: 0, Pos: []uint64{1}, NoSum: true}.Build())
		require.ErrorIs(t, err, errNativeNoSum)
		assert.Nil(t, h)
	})
	t.Run("count_below_population", func(t *testing.T) {
		dp := promtest.ExpPoint{Scale: 0, Pos: []uint64{3}, Sum: 1}.Build()
		dp.SetCount(2)
		_, err := nativeHistogram(dp)
		require.ErrorIs(t, err, errNativePopulation)
	})
	t.Run("nan_sum_allows_more_observations", func(t *testing.T) {
		dp := promtest.ExpPoint{Scale: 0, Pos: []uint64{3}, Sum: math.NaN(), ExtraCount: 2}.Build()
		h, err := nativeHistogram(dp)
		require.NoError(t, err)
		assert.Equal(t, uint64(5), h.GetSampleCount())
		assert.True(t, math.IsNaN(h.GetSampleSum()))
		dp.SetCount(2)
		_, err = nativeHistogram(dp)
		require.ErrorIs(t, err, errNativePopulation)
	})
	t.Run("index_beyond_int32", func(t *testing.T) {
		dp := promtest.ExpPoint{Scale: 0, PosOffset: math.MaxInt32 - 1, Pos: []uint64{1, 1}, Sum: 1}.Build()
		_, err := nativeHistogram(dp)
		require.ErrorIs(t, err, errNativeRange)
	})
	t.Run("count_beyond_int64", func(t *testing.T) {
		dp := promtest.ExpPoint{Scale: 0, Pos: []uint64{math.MaxInt64 + 1}, Sum: 1}.Build()
		_, err := nativeHistogram(dp)
		require.ErrorIs(t, err, errNativeRange)
	})
	t.Run("bucket_total_overflows", func(t *testing.T) {
		dp := promtest.ExpPoint{Scale: 0, Pos: []uint64{math.MaxUint64, 2}, Sum: 1}.Build()
		_, err := nativeHistogram(dp)
		require.ErrorIs(t, err, errNativeRange)
	})
}

func TestNativeHistogramTimestampsAndExemplars(t *testing.T) {
	t.Run("no_start_no_created", func(t *testing.T) {
		dp := promtest.ExpPoint{Scale: 0, Pos: []uint64{1}, Sum: 1}.Build()
		dp.SetStartTimestamp(0)
		h, err := nativeHistogram(dp)
		require.NoError(t, err)
		assert.Nil(t, h.GetCreatedTimestamp())
	})
	t.Run("created_from_start", func(t *testing.T) {
		h, err := nativeHistogram(promtest.ExpPoint{Scale: 0, Pos: []uint64{1}, Sum: 1}.Build())
		require.NoError(t, err)
		assert.Equal(t, promtest.NHStart, h.GetCreatedTimestamp().AsTime())
	})
	t.Run("exemplar_labels_and_timestamp_fallback", func(t *testing.T) {
		dp := promtest.ExpPoint{Scale: 0, Pos: []uint64{1}, Sum: 1}.Build()
		e := dp.Exemplars().AppendEmpty()
		e.SetIntValue(7)
		e.SetTraceID(pcommon.TraceID{0xab, 0xcd})
		e.SetSpanID(pcommon.SpanID{0xef})
		h, err := nativeHistogram(dp)
		require.NoError(t, err)
		require.Len(t, h.GetExemplars(), 1)
		x := h.GetExemplars()[0]
		assert.Equal(t, 7.0, x.GetValue())
		assert.Equal(t, promtest.NHTS, x.GetTimestamp().AsTime(), "the point's timestamp")
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
	p := promtest.ExpPoint{Scale: scale, Sum: r.Float64() * 100}
	p.PosOffset, p.Pos = side()
	p.NegOffset, p.Neg = side()
	if r.IntN(2) == 0 {
		p.ZeroCount = uint64(r.IntN(50))
	}
	if r.IntN(3) == 0 {
		p.ZeroThreshold = math.Exp2(-float64(r.IntN(100)))
	}
	return p.Build()
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
		dp := promtest.ExpPoint{
			Scale: int32(scale), ZeroCount: uint64(zero), PosOffset: int32(posOff), Pos: toCounts(pos),
			NegOffset: int32(negOff), Neg: toCounts(neg), Sum: 1,
		}.Build()
		got, err := nativeHistogram(dp)
		require.NoError(t, err)
		checkNativeProperties(t, dp, got)
	})
}

// TestNativeHistogramSameBucketsAsStockExporter feeds the golden points to
// the contrib prometheus exporter, scrapes its protobuf exposition, and
// requires the same histogram: schema, zero bucket, count, sum, created
// timestamp, bucket contents and exemplars (every golden exemplar has a
// timestamp: for one without, see TestNativeExemplarsBesideStockExporter).
// The layout is not compared: the stock exporter writes OTLP's empty
// buckets as explicit zeros. A point without a sum is served by neither.
func TestNativeHistogramSameBucketsAsStockExporter(t *testing.T) {
	stock, url := promtest.StartStock(t, nil)
	md := pmetric.NewMetrics()
	ms := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics()
	add := func(name, help string, p promtest.ExpPoint) {
		m := ms.AppendEmpty()
		m.SetName(name)
		m.SetDescription(help)
		eh := m.SetEmptyExponentialHistogram()
		eh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		p.Build().CopyTo(eh.DataPoints().AppendEmpty())
	}
	for i, g := range nhGoldens {
		add("nh_golden_"+string(rune('a'+i)), g.name, g.point)
	}
	noSum := promtest.ExpPoint{Scale: -4, PosOffset: -1, Pos: []uint64{1, 1}, NoSum: true}
	add("nh_no_sum", "no_sum", noSum)
	require.NoError(t, stock.ConsumeMetrics(t.Context(), md))

	body, _ := promtest.Scrape(t, url, `application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited`, false)
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
	_, err := nativeHistogram(noSum.Build())
	require.ErrorIs(t, err, errNativeNoSum)

	for _, g := range nhGoldens {
		t.Run(g.name, func(t *testing.T) {
			want := stockByHelp[g.name]
			require.NotNil(t, want)
			got, err := nativeHistogram(g.point.Build())
			require.NoError(t, err)
			assert.Equal(t, want.GetSchema(), got.GetSchema(), "schema")
			assert.Equal(t, want.GetZeroThreshold(), got.GetZeroThreshold(), "zero threshold")
			assert.Equal(t, want.GetZeroCount(), got.GetZeroCount(), "zero count")
			assert.Equal(t, want.GetSampleCount(), got.GetSampleCount(), "count")
			assert.Equal(t, want.GetSampleSum(), got.GetSampleSum(), "sum")
			assert.Equal(t, want.GetCreatedTimestamp().AsTime(), got.GetCreatedTimestamp().AsTime(), "created")
			assert.Equal(t, promtest.NativeBucketMap(want.GetPositiveSpan(), want.GetPositiveDelta()), promtest.NativeBucketMap(got.GetPositiveSpan(), got.GetPositiveDelta()), "positive buckets")
			assert.Equal(t, promtest.NativeBucketMap(want.GetNegativeSpan(), want.GetNegativeDelta()), promtest.NativeBucketMap(got.GetNegativeSpan(), got.GetNegativeDelta()), "negative buckets")
			assert.Equal(t, promtest.ExemplarStrings(want.GetExemplars()), promtest.ExemplarStrings(got.GetExemplars()), "exemplars")
		})
	}
}
