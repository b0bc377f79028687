package series

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/internal/buckets"
)

// expoIndex20 gives go-expohisto's scale-20 index for every value: random durations over the
// whole fast range and beyond, the values on either side of bucket boundaries (where the fast
// path must defer to go-expohisto), exact powers of two, and the extremes.
func TestExpoIndex20MatchesLogarithmMapping(t *testing.T) {
	check := func(v float64) {
		t.Helper()
		if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return
		}
		if got, want := ExpoIndex20(v), expoMapping20.MapToIndex(v); got != want {
			t.Fatalf("expoIndex20(%v = %#x) = %d, go-expohisto %d", v, math.Float64bits(v), got, want)
		}
	}
	r := rand.New(rand.NewPCG(3, 9))
	n := 2_000_000
	if testing.Short() {
		n = 200_000
	}
	for range n {
		check(math.Exp2(r.Float64()*2*(expoFastExp+4) - (expoFastExp + 4)))
		check(math.Float64frombits(r.Uint64() >> 1)) // any positive float64
	}
	// Around boundaries: the lower boundary of random indices, and its neighbours.
	for range n / 10 {
		idx := int32(r.IntN(2*expoFastExp<<expoMaxScale)) - expoFastExp<<expoMaxScale
		b, err := expoMapping20.LowerBoundary(idx)
		require.NoError(t, err)
		for _, d := range []float64{0, -1, 1, -2, 2, -8, 8, -1e3, 1e3} {
			check(math.Float64frombits(uint64(int64(math.Float64bits(b)) + int64(d))))
		}
	}
	for e := -1074; e <= 1023; e++ {
		p := math.Ldexp(1, e)
		check(p)
		check(math.Nextafter(p, 0))
		check(math.Nextafter(p, math.Inf(1)))
	}
	for _, v := range []float64{math.SmallestNonzeroFloat64, 0x1p-1022, math.MaxFloat64, 1e-300, 1e300, 1, 3, 0.1} {
		check(v)
	}
	require.Equal(t, int32(ZeroCode), ExpoIndex20(0))
}

// The table is what indexes durations: few of them defer to go-expohisto.
func TestExpoIndex20FallbackIsRare(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2))
	slow := 0
	const n = 100_000
	for range n {
		v := 0.1 * math.Pow(10, r.Float64()*4) // 100 µs to 1 s in ms
		if _, ok := expoIndex20Fast(v); !ok {
			slow++
		}
	}
	require.Less(t, slow, n/1000)
}

// BenchmarkExpoIndex20 times the scale-20 index of durations from 100 µs to 1 s: the table,
// go-expohisto's logarithm mapping (what the table replaced), and the explicit bucket.
func BenchmarkExpoIndex20(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	vals := make([]float64, 4096)
	for i := range vals {
		vals[i] = 0.1 * math.Pow(10, r.Float64()*4) // 100 µs to 1 s in ms
	}
	var sink int32
	b.Run("table", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sink ^= ExpoIndex20(vals[i&4095])
		}
	})
	b.Run("go-expohisto", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sink ^= expoMapping20.MapToIndex(vals[i&4095])
		}
	})
	// The explicit histogram's bucket, spanmetrics' default bounds (ms), for comparison.
	explicit := buckets.NewExplicit([]float64{2, 4, 6, 8, 10, 50, 100, 200, 400, 800, 1000, 1400, 2000, 5000, 10_000, 15_000})
	b.Run("explicit", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sink ^= int32(explicit.Index(vals[i&4095]))
		}
	})
	_ = sink
}
