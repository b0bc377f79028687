package store

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
)

// heldExp returns the state of the store's only exponential histogram series.
func heldExp(t *testing.T, s *Store) *expState {
	t.Helper()
	var held []expState
	for id := range s.t.rows.count {
		if e := s.t.exp.held(uint32(id)); e != nil {
			held = append(held, s.t.exp.load(e))
		}
	}
	require.Len(t, held, 1)
	return &held[0]
}

func TestExpBucketsCumulativeKeepsLastPoint(t *testing.T) {
	s := newTestStore()
	s.Consume(promtest.ExpBatch(false, 0, promtest.ExpPoint{Scale: 3, PosOffset: 5, Pos: []uint64{1, 2, 3, 4}, NegOffset: -2, Neg: []uint64{7}, ZeroCount: 2}.Build()), time.Now())
	s.Consume(promtest.ExpBatch(false, 1, promtest.ExpPoint{Scale: 2, PosOffset: -1, Pos: []uint64{9, 8}, ZeroCount: 1, ZeroThreshold: 0.5}.Build()), time.Now())
	st := heldExp(t, s)
	assert.Equal(t, int32(2), st.scale)
	assert.Equal(t, expBuckets{offset: -1, counts: []uint64{9, 8}}, st.pos)
	assert.Empty(t, st.neg.counts)
	assert.Equal(t, uint64(1), st.zeroCount)
	assert.Equal(t, 0.5, st.zeroThresh)
	assert.Equal(t, uint64(18), st.population)
	assert.Equal(t, int64(pcommon.NewTimestampFromTime(promtest.NHStart)), st.start)
}

func TestExpBucketsDeltasAdd(t *testing.T) {
	tests := []struct {
		name     string
		points   []promtest.ExpPoint
		scale    int32
		pos, neg expBuckets
		zero     uint64
		zt       float64
	}{
		{
			name: "same scale, overlapping and extending",
			points: []promtest.ExpPoint{
				{Scale: 0, PosOffset: 2, Pos: []uint64{1, 2, 3}},
				{Scale: 0, PosOffset: 0, Pos: []uint64{10, 0, 20, 30}, ZeroCount: 4},
				{Scale: 0, PosOffset: 6, Pos: []uint64{5}},
			},
			pos:  expBuckets{offset: 0, counts: []uint64{10, 0, 21, 32, 3, 0, 5}},
			zero: 4,
		},
		{
			// Scale 2 → 1: index i becomes i>>1 (floor), -3 → -2, -2 → -1, -1 → -1.
			name: "downscaled to the smaller scale, negative indexes floored",
			points: []promtest.ExpPoint{
				{Scale: 2, PosOffset: -3, Pos: []uint64{1, 2, 4, 8, 16}, NegOffset: 1, Neg: []uint64{1, 1, 1}},
				{Scale: 1, PosOffset: -1, Pos: []uint64{100, 200}},
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
			points: []promtest.ExpPoint{
				{Scale: 0, PosOffset: -1, Pos: []uint64{1, 2, 4, 8}, NegOffset: 0, Neg: []uint64{16, 32, 64}, ZeroThreshold: 0.5, ZeroCount: 3},
				{Scale: 0, PosOffset: 3, Pos: []uint64{100}, ZeroThreshold: 4, ZeroCount: 5},
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
				dp := p.Build()
				total += dp.Count()
				s.Consume(promtest.ExpBatch(true, i, dp), time.Now())
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
			assert.Equal(t, int64(pcommon.NewTimestampFromTime(promtest.NHStart)), st.start, "the first point's start")
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
			p := promtest.ExpPoint{Scale: int32(r.IntN(8)) - 2, ZeroCount: uint64(r.IntN(3))}
			side := func() (int32, []uint64) {
				off := int32(r.IntN(200) - 100)
				c := make([]uint64, r.IntN(30))
				for j := range c {
					c[j] = uint64(r.IntN(5))
				}
				return off, c
			}
			p.PosOffset, p.Pos = side()
			p.NegOffset, p.Neg = side()
			for j, c := range p.Pos {
				inputs = append(inputs, input{p.Scale, 0, int64(p.PosOffset) + int64(j), c})
			}
			for j, c := range p.Neg {
				inputs = append(inputs, input{p.Scale, 1, int64(p.NegOffset) + int64(j), c})
			}
			zero += p.ZeroCount
			s.Consume(promtest.ExpBatch(true, i, p.Build()), time.Now())
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
	s.Consume(promtest.ExpBatch(true, 0, promtest.ExpPoint{Scale: 8, PosOffset: -1_000_000, Pos: []uint64{1, 2}}.Build()), time.Now())
	s.Consume(promtest.ExpBatch(true, 1, promtest.ExpPoint{Scale: 8, PosOffset: 1_000_000, Pos: []uint64{3}}.Build()), time.Now())
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
