package store

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
)

// expSeriesBatch is one exponential histogram point of series k of metric
// name; delta points of a series follow each other at step minutes.
func expSeriesBatch(name string, delta bool, k, step int, dp pmetric.ExponentialHistogramDataPoint, noValue bool) pmetric.Metrics {
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName(name)
	h := m.SetEmptyExponentialHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	start := promtest.NHStart
	if delta {
		h.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
		start = promtest.NHStart.Add(time.Duration(step) * time.Minute)
	}
	out := h.DataPoints().AppendEmpty()
	dp.CopyTo(out)
	out.Attributes().PutInt("k", int64(k))
	out.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	out.SetTimestamp(pcommon.NewTimestampFromTime(promtest.NHStart.Add(time.Duration(step+1) * time.Minute)))
	if noValue {
		out.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
	}
	return md
}

// TestExpSlabMatchesHeapState drives many series of a delta and a
// cumulative metric through growth, shrinking, deletion and reuse of rows
// and blocks, and checks each stored state against the same points applied
// to a plain heap expState, as the store kept it in a map before.
func TestExpSlabMatchesHeapState(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	s := newTestStore()
	type key struct {
		delta bool
		k     int
	}
	model := map[key]*expState{}
	steps := map[key]int{}
	var scratch [2]expBuckets
	side := func() (int32, []uint64) {
		c := make([]uint64, r.IntN(40))
		if r.IntN(50) == 0 {
			c = make([]uint64, 1+r.IntN(300))
		}
		for j := range c {
			c[j] = uint64(r.IntN(5))
		}
		return int32(r.IntN(400) - 200), c
	}
	for round := range 3000 {
		kk := key{delta: r.IntN(2) == 0, k: r.IntN(30)}
		name := "cumulative"
		if kk.delta {
			name = "delta"
		}
		steps[kk]++
		if r.IntN(15) == 0 {
			s.Consume(expSeriesBatch(name, kk.delta, kk.k, steps[kk], promtest.ExpPoint{}.Build(), true), time.Now())
			delete(model, kk)
			continue
		}
		p := promtest.ExpPoint{Scale: int32(r.IntN(8)) - 2, ZeroCount: uint64(r.IntN(3))}
		if r.IntN(4) == 0 {
			p.ZeroThreshold = float64(r.IntN(3))
		}
		p.PosOffset, p.Pos = side()
		p.NegOffset, p.Neg = side()
		dp := p.Build()
		s.Consume(expSeriesBatch(name, kk.delta, kk.k, steps[kk], dp, false), time.Now())
		st := model[kk]
		if st == nil || !kk.delta {
			st = &expState{scale: dp.Scale(), zeroThresh: dp.ZeroThreshold()}
			st.setBuckets(dp)
			model[kk] = st
		} else {
			st.addBuckets(dp, &scratch)
		}
		if round%100 == 99 || round == 2999 {
			checkExpSlab(t, s, round, func(delta bool, k int) *expState { return model[key{delta, k}] }, len(model))
		}
	}
}

// checkExpSlab compares every held state of s with want's.
func checkExpSlab(t *testing.T, s *Store, round int, want func(delta bool, k int) *expState, n int) {
	t.Helper()
	held := 0
	for id := range s.t.rows.count {
		r := s.t.rows.at(uint32(id))
		if r.flags&rowUsed == 0 {
			require.Nil(t, s.t.exp.held(uint32(id)), "round %d: a free row holds state", round)
			continue
		}
		e := s.t.exp.held(uint32(id))
		require.NotNil(t, e, "round %d", round)
		held++
		var k int
		_, err := fmt.Sscanf(strings.SplitN(string(s.t.labels.appendTo(nil, r.lbl)), `k="`, 2)[1], "%d", &k)
		require.NoError(t, err)
		w := want(s.t.families.at(r.fam).name == "delta", k)
		require.NotNil(t, w, "round %d: series %d held but deleted", round, k)
		got := s.t.exp.load(e)
		require.Equal(t, w.scale, got.scale, "round %d", round)
		require.Equal(t, w.zeroThresh, got.zeroThresh, "round %d", round)
		require.Equal(t, w.zeroCount, got.zeroCount, "round %d", round)
		for i, sides := range [][2]expBuckets{{w.pos, got.pos}, {w.neg, got.neg}} {
			require.Equal(t, sides[0].offset, sides[1].offset, "round %d side %d", round, i)
			require.Equal(t, len(sides[0].counts), len(sides[1].counts), "round %d side %d", round, i)
			if len(sides[0].counts) > 0 {
				require.Equal(t, sides[0].counts, sides[1].counts, "round %d side %d", round, i)
			}
		}
	}
	require.Equal(t, n, held, "round %d", round)
}

// A cumulative point with more buckets than an arena chunk gets a block of
// its own, given back when the series shrinks and its slot reused.
func TestExpSlabLargeBlock(t *testing.T) {
	s := newTestStore()
	big := make([]uint64, expChunk+10)
	for i := range big {
		big[i] = uint64(i % 7)
	}
	s.Consume(promtest.ExpBatch(false, 0, promtest.ExpPoint{Scale: 1, PosOffset: -3, Pos: big}.Build()), time.Now())
	st := heldExp(t, s)
	assert.Equal(t, big, st.pos.counts)
	chunks := len(s.t.exp.bkts.chunks)
	s.Consume(promtest.ExpBatch(false, 1, promtest.ExpPoint{Scale: 1, PosOffset: 2, Pos: []uint64{4, 5}}.Build()), time.Now())
	st = heldExp(t, s)
	assert.Equal(t, []uint64{4, 5}, st.pos.counts, "the large block still fits a small point")
	s.Consume(promtest.ExpBatch(false, 2, promtest.ExpPoint{Scale: 1, PosOffset: 2, Pos: big[:expChunk+20-10]}.Build()), time.Now())
	assert.Equal(t, big[:expChunk+10], heldExp(t, s).pos.counts)
	assert.Len(t, s.t.exp.bkts.chunks, chunks, "the block is reused, no chunk added")
}

// Held exponential histogram series are heap objects no more: the store
// holds about as many with them as with explicit histograms, whose buckets
// have always been off the heap. Before the slab, each added two or three.
func TestExpSlabAddsNoHeapObjectsPerSeries(t *testing.T) {
	const n = 20000
	objsExp, sExp := heldObjects(true, n)
	objsExplicit, sExplicit := heldObjects(false, n)
	t.Logf("heap objects held by %d series: exponential %d, explicit %d", n, objsExp, objsExplicit)
	assert.Less(t, objsExp, objsExplicit+n/100, "exponential series add heap objects per series")
	sExp.Close()
	sExplicit.Close()
}

// Updating held exponential histogram series allocates per batch, never
// per point, delta (added in place in the blocks) and cumulative (copied
// into them) alike: twice the points allocate the same.
func TestExpIngestAllocatesNotPerPoint(t *testing.T) {
	batch := func(delta bool, points, step int) pmetric.Metrics {
		md := pmetric.NewMetrics()
		m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName("latency")
		h := m.SetEmptyExponentialHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		start := promtest.NHStart
		if delta {
			h.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
			start = promtest.NHStart.Add(time.Duration(step) * time.Minute)
		}
		for i := range points {
			dp := h.DataPoints().AppendEmpty()
			dp.SetScale(3)
			dp.Positive().SetOffset(int32(10 + (step+i)%3))
			dp.Positive().BucketCounts().FromRaw([]uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
			dp.Negative().SetOffset(-2)
			dp.Negative().BucketCounts().FromRaw([]uint64{1})
			dp.SetCount(56)
			dp.SetSum(100)
			dp.Attributes().PutStr("k", strconv.Itoa(i)) // an int's string form would allocate
			dp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
			dp.SetTimestamp(pcommon.NewTimestampFromTime(promtest.NHStart.Add(time.Duration(step+1) * time.Minute)))
		}
		return md
	}
	for _, delta := range []bool{true, false} {
		allocs := func(points int) float64 {
			s := newTestStore()
			var batches []pmetric.Metrics
			for step := range 20 {
				batches = append(batches, batch(delta, points, step))
			}
			for _, md := range batches[:5] { // the blocks reach their span
				require.True(t, s.Consume(md, time.Now()))
			}
			next := 5
			return testing.AllocsPerRun(10, func() {
				if !s.Consume(batches[next], time.Now()) {
					t.Error("batch not taken")
				}
				next++
			})
		}
		small, large := allocs(500), allocs(1000)
		assert.Equal(t, small, large, "delta %v: allocations grow with the number of points", delta)
	}
}
