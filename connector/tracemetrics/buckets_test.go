package tracemetrics

import (
	"math"
	"testing"

	"github.com/lightstep/go-expohisto/structure"
	"github.com/stretchr/testify/require"
)

// The sketch gives what go-expohisto (spanmetrics' implementation) gives, value by value and
// after merging partial sketches in any grouping.
func TestExponentialSketchMatchesGoExpohisto(t *testing.T) {
	r := newRand(5)
	for _, maxSize := range []int32{2, 4, 12, 160} {
		for trial := 0; trial < 40; trial++ {
			ref := new(structure.Histogram[float64])
			ref.Init(structure.NewConfig(structure.WithMaxSize(maxSize)))
			var whole, merged slab
			var k, acc expoSketch
			var part expoSketch
			var partSlab slab
			var zeros uint64
			n := 1 + r.IntN(500)
			spread := r.Float64() * 30
			for i := 0; i < n; i++ {
				v := math.Exp(r.NormFloat64()*spread) * 1e-3
				if r.IntN(20) == 0 {
					v = 0
				}
				if r.IntN(10) == 0 {
					v = math.Ldexp(1, r.IntN(40)-20) // exact powers of two
				}
				ref.Update(v)
				code := expoIndex20(v)
				if code == zeroCode {
					zeros++
					continue
				}
				k.add(&whole, code, 1, maxSize)
				part.add(&partSlab, code, 1, maxSize)
				if r.IntN(7) == 0 { // fold the partial sketch into the accumulator
					acc.merge(&merged, &part, &partSlab, maxSize)
					part, partSlab = expoSketch{}, slab{}
				}
			}
			acc.merge(&merged, &part, &partSlab, maxSize)
			require.Equal(t, ref.ZeroCount(), zeros)
			for _, got := range []struct {
				k *expoSketch
				s *slab
			}{{&k, &whole}, {&acc, &merged}} {
				if ref.Count() == ref.ZeroCount() {
					require.Zero(t, got.k.n)
					continue
				}
				require.Equal(t, ref.Scale(), got.k.scale, "maxSize %d", maxSize)
				require.Equal(t, ref.Positive().Offset(), got.k.start)
				want := make([]uint64, ref.Positive().Len())
				for i := range want {
					want[i] = ref.Positive().At(uint32(i))
				}
				require.Equal(t, want, got.k.counts(got.s)[:got.k.n])
				for _, c := range got.k.counts(got.s)[got.k.n:] {
					require.Zero(t, c, "slots past n must stay zero")
				}
			}
		}
	}
}

func TestSketchFreeAndRegrow(t *testing.T) {
	var s slab
	var k expoSketch
	k.add(&s, 100, 1, 160)
	k.add(&s, 200, 1, 160)
	k.free(&s)
	require.Zero(t, k.n)
	require.Positive(t, s.waste)
	k.add(&s, 300, 2, 160)
	require.Equal(t, []uint64{2}, k.counts(&s)[:k.n])
}
