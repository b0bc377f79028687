package series

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lightstep/go-expohisto/structure"
	"github.com/stretchr/testify/require"
)

// The sketch gives what go-expohisto (spanmetrics' implementation) gives, value by value and
// after merging partial sketches in any grouping.
func TestExponentialSketchMatchesGoExpohisto(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5^0x5eed))
	for _, maxSize := range []int32{2, 4, 12, 160} {
		for trial := 0; trial < 40; trial++ {
			ref := new(structure.Histogram[float64])
			ref.Init(structure.NewConfig(structure.WithMaxSize(maxSize)))
			var whole, merged Slab
			var k, acc ExpoSketch
			var part ExpoSketch
			var partSlab Slab
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
				code := ExpoIndex20(v)
				if code == ZeroCode {
					zeros++
					continue
				}
				k.Add(&whole, code, 1, maxSize)
				part.Add(&partSlab, code, 1, maxSize)
				if r.IntN(7) == 0 { // fold the partial sketch into the accumulator
					acc.Merge(&merged, &part, &partSlab, maxSize)
					part, partSlab = ExpoSketch{}, Slab{}
				}
			}
			acc.Merge(&merged, &part, &partSlab, maxSize)
			require.Equal(t, ref.ZeroCount(), zeros)
			for _, got := range []struct {
				k *ExpoSketch
				s *Slab
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
	var s Slab
	var k ExpoSketch
	k.Add(&s, 100, 1, 160)
	k.Add(&s, 200, 1, 160)
	k.Free(&s)
	require.Zero(t, k.n)
	require.Positive(t, s.waste)
	k.Add(&s, 300, 2, 160)
	require.Equal(t, []uint64{2}, k.counts(&s)[:k.n])
}
