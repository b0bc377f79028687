package cachedprom

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
)

// expBatch wraps exponential histogram points of one series in a metric of
// the given temporality; point i covers [start+i min, start+(i+1) min).
func expBatch(delta bool, first int, points ...pmetric.ExponentialHistogramDataPoint) pmetric.Metrics {
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("latency")
	h := m.SetEmptyExponentialHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	if delta {
		h.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	}
	for i, p := range points {
		dp := h.DataPoints().AppendEmpty()
		p.CopyTo(dp)
		start := nhStart.Add(time.Duration(first+i) * time.Minute)
		if !delta {
			start = nhStart
		}
		dp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		dp.SetTimestamp(pcommon.NewTimestampFromTime(nhStart.Add(time.Duration(first+i+1) * time.Minute)))
	}
	return md
}

// heldExp returns the state of the store's only exponential histogram series.
func heldExp(t *testing.T, s *seriesStore) *expState {
	t.Helper()
	var held []expState
	for id := range s.rowCount {
		if e := s.heldExpRow(uint32(id)); e != nil {
			held = append(held, s.expLoad(e))
		}
	}
	require.Len(t, held, 1)
	return &held[0]
}

func newTestStore() *seriesStore {
	return newSeriesStore(createDefaultConfig().(*Config), zap.NewNop())
}

func TestExpBucketsCumulativeKeepsLastPoint(t *testing.T) {
	s := newTestStore()
	s.consume(expBatch(false, 0, expPoint{scale: 3, posOffset: 5, pos: []uint64{1, 2, 3, 4}, negOffset: -2, neg: []uint64{7}, zeroCount: 2}.build()), time.Now())
	s.consume(expBatch(false, 1, expPoint{scale: 2, posOffset: -1, pos: []uint64{9, 8}, zeroCount: 1, zeroThreshold: 0.5}.build()), time.Now())
	st := heldExp(t, s)
	assert.Equal(t, int32(2), st.scale)
	assert.Equal(t, expBuckets{offset: -1, counts: []uint64{9, 8}}, st.pos)
	assert.Empty(t, st.neg.counts)
	assert.Equal(t, uint64(1), st.zeroCount)
	assert.Equal(t, 0.5, st.zeroThresh)
	assert.Equal(t, uint64(18), st.population)
	assert.Equal(t, int64(pcommon.NewTimestampFromTime(nhStart)), st.start)
}

func TestExpBucketsDeltasAdd(t *testing.T) {
	tests := []struct {
		name     string
		points   []expPoint
		scale    int32
		pos, neg expBuckets
		zero     uint64
		zt       float64
	}{
		{
			name: "same scale, overlapping and extending",
			points: []expPoint{
				{scale: 0, posOffset: 2, pos: []uint64{1, 2, 3}},
				{scale: 0, posOffset: 0, pos: []uint64{10, 0, 20, 30}, zeroCount: 4},
				{scale: 0, posOffset: 6, pos: []uint64{5}},
			},
			pos:  expBuckets{offset: 0, counts: []uint64{10, 0, 21, 32, 3, 0, 5}},
			zero: 4,
		},
		{
			// Scale 2 → 1: index i becomes i>>1 (floor), -3 → -2, -2 → -1, -1 → -1.
			name: "downscaled to the smaller scale, negative indexes floored",
			points: []expPoint{
				{scale: 2, posOffset: -3, pos: []uint64{1, 2, 4, 8, 16}, negOffset: 1, neg: []uint64{1, 1, 1}},
				{scale: 1, posOffset: -1, pos: []uint64{100, 200}},
			},
			scale: 1,
			// scale-2 indexes -3..1 → -2,-1,-1,0,0 plus -1:100, 0:200
			pos: expBuckets{offset: -2, counts: []uint64{1, 106, 224}},
			// 1,2,3 → 0,1,1
			neg: expBuckets{offset: 0, counts: []uint64{1, 2}},
		},
		{
			// A wider zero bucket takes the buckets whose upper bound is at
			// most the new threshold: at scale 0 bucket i ends at 2^(i+1),
			// so with threshold 4, indexes ..1 go (upper bounds 1, 2, 4).
			name: "zero threshold widened",
			points: []expPoint{
				{scale: 0, posOffset: -1, pos: []uint64{1, 2, 4, 8}, negOffset: 0, neg: []uint64{16, 32, 64}, zeroThreshold: 0.5, zeroCount: 3},
				{scale: 0, posOffset: 3, pos: []uint64{100}, zeroThreshold: 4, zeroCount: 5},
			},
			pos:  expBuckets{offset: 2, counts: []uint64{8, 100}},
			neg:  expBuckets{offset: 2, counts: []uint64{64}},
			zero: 3 + 5 + 1 + 2 + 4 + 16 + 32,
			zt:   4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore()
			var total uint64
			for i, p := range tt.points {
				dp := p.build()
				total += dp.Count()
				s.consume(expBatch(true, i, dp), time.Now())
			}
			st := heldExp(t, s)
			assert.Equal(t, tt.scale, st.scale)
			assert.Equal(t, tt.pos.offset, st.pos.offset)
			assert.Equal(t, tt.pos.counts, st.pos.counts)
			assert.Equal(t, tt.neg.offset, st.neg.offset)
			assert.Equal(t, tt.neg.counts, st.neg.counts)
			assert.Equal(t, tt.zero, st.zeroCount)
			assert.Equal(t, tt.zt, st.zeroThresh)
			assert.Equal(t, total, st.population)
			assert.Equal(t, int64(pcommon.NewTimestampFromTime(nhStart)), st.start, "the first point's start")
		})
	}
}

// TestExpBucketsDeltasRandom adds random deltas of random scales (one zero
// threshold, so nothing moves into the zero bucket) and checks every input
// bucket's count landed in the bucket that contains it at the final scale.
func TestExpBucketsDeltasRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 300 {
		s := newTestStore()
		want := map[[2]int64]uint64{} // side, OTLP index at the final scale
		type input struct {
			scale int32
			side  int64
			idx   int64
			count uint64
		}
		var inputs []input
		var zero uint64
		n := 1 + r.IntN(5)
		for i := range n {
			p := expPoint{scale: int32(r.IntN(8)) - 2, zeroCount: uint64(r.IntN(3))}
			side := func() (int32, []uint64) {
				off := int32(r.IntN(200) - 100)
				c := make([]uint64, r.IntN(30))
				for j := range c {
					c[j] = uint64(r.IntN(5))
				}
				return off, c
			}
			p.posOffset, p.pos = side()
			p.negOffset, p.neg = side()
			for j, c := range p.pos {
				inputs = append(inputs, input{p.scale, 0, int64(p.posOffset) + int64(j), c})
			}
			for j, c := range p.neg {
				inputs = append(inputs, input{p.scale, 1, int64(p.negOffset) + int64(j), c})
			}
			zero += p.zeroCount
			s.consume(expBatch(true, i, p.build()), time.Now())
		}
		st := heldExp(t, s)
		for _, in := range inputs {
			require.GreaterOrEqual(t, in.scale, st.scale)
			want[[2]int64{in.side, in.idx >> (in.scale - st.scale)}] += in.count
		}
		got := map[[2]int64]uint64{}
		for side, b := range []expBuckets{st.pos, st.neg} {
			for j, c := range b.counts {
				got[[2]int64{int64(side), int64(b.offset) + int64(j)}] += c
			}
		}
		for k, v := range want {
			if v == 0 {
				delete(want, k)
			}
		}
		for k, v := range got {
			if v == 0 {
				delete(got, k)
			}
		}
		require.Equal(t, want, got, "round %d", round)
		require.Equal(t, zero, st.zeroCount, "round %d", round)
	}
}

// TestExpBucketsSpanBounded: deltas with far apart indexes are downscaled
// until their union fits maxExpBuckets, totals kept.
func TestExpBucketsSpanBounded(t *testing.T) {
	s := newTestStore()
	s.consume(expBatch(true, 0, expPoint{scale: 8, posOffset: -1_000_000, pos: []uint64{1, 2}}.build()), time.Now())
	s.consume(expBatch(true, 1, expPoint{scale: 8, posOffset: 1_000_000, pos: []uint64{3}}.build()), time.Now())
	st := heldExp(t, s)
	assert.LessOrEqual(t, len(st.pos.counts), maxExpBuckets)
	assert.Less(t, st.scale, int32(8))
	var total uint64
	for _, c := range st.pos.counts {
		total += c
	}
	assert.Equal(t, uint64(6), total)
	assert.Equal(t, int64(-1_000_000)>>(8-st.scale), int64(st.pos.offset))
}

// Adding a delta point whose buckets the held state already covers allocates nothing: the
// point's sides pass through the store's scratch, not through copies of their own.
func TestExpBucketsAddAllocatesNothing(t *testing.T) {
	var st expState
	var scratch [2]expBuckets
	dp := pmetric.NewExponentialHistogramDataPoint()
	dp.SetScale(3)
	dp.SetCount(6)
	dp.Positive().SetOffset(10)
	dp.Positive().BucketCounts().FromRaw([]uint64{1, 2, 3})
	st.scale = 3
	st.setBuckets(dp)
	st.addBuckets(dp, &scratch) // the scratch grows once (AllocsPerRun adds once more, unmeasured)
	allocs := testing.AllocsPerRun(100, func() { st.addBuckets(dp, &scratch) })
	assert.Zero(t, allocs)
	assert.Equal(t, []uint64{103, 206, 309}, st.pos.counts)
	assert.Equal(t, int32(10), st.pos.offset)
}
