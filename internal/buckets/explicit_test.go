package buckets

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Index is exactly the binary search, for bounds the table serves (several bounds in one cell
// included) and for those it leaves to the binary search, at and around every bound.
func TestExplicitMatchesBinarySearch(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	boundSets := [][]float64{
		{2, 4, 6, 8, 10, 50, 100, 200, 400, 800, 1000, 1400, 2000, 5000, 10000, 15000},
		{0.002, 0.004, 0.006, 0.008, 0.01, 0.05, 0.1, 0.2, 0.4, 0.8, 1, 1.4, 2, 5, 10, 15},
		{1, 1.01, 1.02, 1.03, 1.04, 1.05, 100}, // several bounds per table cell
		{0, 5, 10},                             // non-positive bound: binary search fallback
		{7},
		{},
	}
	for _, bounds := range boundSets {
		e := NewExplicit(bounds)
		values := []float64{0, math.SmallestNonzeroFloat64, 1e300, math.Inf(1)}
		for _, b := range bounds {
			values = append(values, b, math.Nextafter(b, 0), math.Nextafter(b, math.Inf(1)))
		}
		for i := 0; i < 100000; i++ {
			values = append(values, math.Exp(r.Float64()*40-20))
		}
		for _, v := range values {
			require.Equal(t, sort.SearchFloat64s(bounds, v), e.Index(v), "bounds %v value %v", bounds, v)
		}
	}
}
