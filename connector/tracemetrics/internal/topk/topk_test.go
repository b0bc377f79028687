package topk

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// With no more keys than entries the counts are exact.
func TestExactWhileKeysFit(t *testing.T) {
	s := New(8)
	want := map[uint64]uint64{}
	for i := range 100 {
		k := uint64(i % 8 * 7919)
		s.Add(k, uint64(i%3+1), uint32(i))
		want[k] += uint64(i%3 + 1)
	}
	top := s.Top(nil, 0)
	require.Len(t, top, 8)
	for i, e := range top {
		require.Equal(t, want[e.Key], e.Count)
		require.Zero(t, e.Err)
		if i > 0 {
			require.GreaterOrEqual(t, top[i-1].Guaranteed(), e.Guaranteed(), "heaviest first")
		}
	}
}

// Heavy keys among a stream of keys seen once (IDs in span names) are all held, with
// a lower bound of their true weight; the noise's guaranteed weight stays at most 1, and most
// of it is turned away by the admission test. Keys are replaced and found again throughout.
func TestHeavyKeysSurviveNoise(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	s := New(64)
	true_ := map[uint64]uint64{}
	heavy := map[uint64]bool{}
	for i := range 40 {
		heavy[uint64(i)<<32|0xabc] = true // same low bits: one long probe run
	}
	var total uint64
	admitted := 0
	for range 200 {
		for k := range heavy {
			w := uint64(1 + r.IntN(4))
			s.Add(k, w, 1)
			true_[k] += w
			total += w
		}
		for range 50 {
			k := r.Uint64() | 1
			s.Add(k, 1, 2)
			if _, ok := s.find(k); ok {
				admitted++
			}
			true_[k]++
			total++
		}
	}
	held := map[uint64]bool{}
	for _, e := range s.Top(nil, 0) {
		held[e.Key] = true
		require.LessOrEqual(t, e.Guaranteed(), true_[e.Key])
		require.LessOrEqual(t, e.Err, total/64, "error at most total/k")
		if !heavy[e.Key] {
			require.LessOrEqual(t, e.Guaranteed(), uint64(1), "noise is never certainly heavy")
		}
	}
	for k := range heavy {
		require.True(t, held[k], "heavy key %x held", k)
	}
	require.Less(t, admitted, 200*50/10, "most noise is turned away")
	top := s.Top(nil, 2)
	require.Len(t, top, len(heavy), "Top with a floor returns the heavy keys only")
	// Every held key can be found through the index after all the replacements.
	for i := range s.entries {
		slot, ok := s.find(s.entries[i].Key)
		require.True(t, ok)
		require.EqualValues(t, i, slot)
	}
	s.Reset()
	require.Zero(t, s.Len())
	require.Empty(t, s.Top(nil, 0))
}

func TestAddAllocatesNothing(t *testing.T) {
	s := New(128)
	var k uint64 = 1
	require.Zero(t, testing.AllocsPerRun(10_000, func() {
		k = k*6364136223846793005 + 1442695040888963407
		s.Add(k>>40, 1, 0) // a few million distinct keys: hits and replacements
	}))
	dst := make([]Entry, 0, 128)
	require.Zero(t, testing.AllocsPerRun(10, func() { dst = s.Top(dst[:0], 0) }))
}

func BenchmarkAdd(b *testing.B) {
	s := New(128)
	var k uint64 = 1
	for b.Loop() {
		k = k*6364136223846793005 + 1442695040888963407
		s.Add(k>>52, 1, 0)
	}
}
