package hll

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hashes returns n distinct well-mixed hashes (splitmix64 of a counter, as a real hash of
// distinct keys would be), from offset on.
func hashes(offset, n int) func(func(uint64) bool) {
	return func(yield func(uint64) bool) {
		for i := offset; i < offset+n; i++ {
			z := uint64(i) + 0x9e3779b97f4a7c15
			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
			z = (z ^ (z >> 27)) * 0x94d049bb133111eb
			if !yield(z ^ (z >> 31)) {
				return
			}
		}
	}
}

// The estimate is within a few % of the true distinct count at every scale the connector
// meets, and adding the same hashes again changes nothing. p = 14 is the precision the
// connector uses (standard error 0.81%: 3% is beyond 3.5 standard errors); p = 12 is shown
// to keep its wider 1.6%.
func TestEstimateWithinAFewPercent(t *testing.T) {
	for _, tc := range []struct {
		p   int
		tol float64
	}{{14, 0.03}, {12, 0.06}} {
		for _, n := range []int{10, 1000, 10_000, 100_000, 1_000_000} {
			t.Run(fmt.Sprintf("p=%d/n=%d", tc.p, n), func(t *testing.T) {
				s := New(tc.p)
				for h := range hashes(0, n) {
					s.Add(h)
				}
				est := s.Estimate()
				require.InDelta(t, float64(n), est, tc.tol*float64(n)+0.5, "estimate of %d distinct", n)
				for h := range hashes(0, n/2) {
					s.Add(h)
				}
				require.Equal(t, est, s.Estimate(), "repeated hashes are not counted again")
			})
		}
	}
}

// Random 64-bit values, not a mixed counter: the same accuracy, and a merge estimates the
// union.
func TestMergeEstimatesTheUnion(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	a, b := New(14), New(14)
	var all []uint64
	for range 200_000 {
		all = append(all, r.Uint64())
	}
	for _, h := range all[:120_000] {
		a.Add(h)
	}
	for _, h := range all[80_000:] {
		b.Add(h)
	}
	require.InEpsilon(t, 120_000, a.Estimate(), 0.03)
	require.InEpsilon(t, 120_000, b.Estimate(), 0.03)
	a.Merge(b)
	require.InEpsilon(t, 200_000, a.Estimate(), 0.03)
	a.Reset()
	require.Zero(t, a.Estimate())
}

// A window forgets what was added more than its length ago, keeps what is younger than
// (n-1)/n of it, and a window without a length never forgets.
func TestWindowForgets(t *testing.T) {
	const sec = int64(time.Second)
	w := NewWindow(14, 4*time.Second, 4, 0)
	for h := range hashes(0, 10_000) {
		w.Add(h)
	}
	w.Advance(1 * sec)
	for h := range hashes(10_000, 5_000) {
		w.Add(h)
	}
	w.Advance(3 * sec)
	require.InEpsilon(t, 15_000, w.Estimate(), 0.03, "both parts are within the window")
	w.Advance(4 * sec)
	require.InEpsilon(t, 5_000, w.Estimate(), 0.03, "the first part has left the window")
	w.Advance(100 * sec)
	require.Zero(t, w.Estimate(), "an idle window is empty")
	for h := range hashes(0, 100) {
		w.Add(h)
	}
	w.Advance(100*sec + sec/2)
	require.InDelta(t, 100, w.Estimate(), 3, "after an idle period parts begin again from now")

	forever := NewWindow(14, 0, 4, 0)
	for h := range hashes(0, 1000) {
		forever.Add(h)
	}
	forever.Advance(math.MaxInt64 / 2)
	require.InDelta(t, 1000, forever.Estimate(), 30)
}

func TestAddAllocatesNothing(t *testing.T) {
	s := New(14)
	w := NewWindow(14, time.Second, 4, 0)
	var h uint64 = 1
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		h = h*6364136223846793005 + 1442695040888963407
		s.Add(h)
		w.Add(h)
	}))
	require.Zero(t, testing.AllocsPerRun(10, func() { _ = s.Estimate(); _ = w.Estimate() }))
}

func BenchmarkAdd(b *testing.B) {
	s := New(14)
	var h uint64 = 1
	for b.Loop() {
		h = h*6364136223846793005 + 1442695040888963407
		s.Add(h)
	}
}

// BenchmarkWindowEstimate is what the connector pays per window at each flush: the union of
// the parts and its estimate, at the precision it uses.
func BenchmarkWindowEstimate(b *testing.B) {
	w := NewWindow(14, 4*time.Second, 4, 0)
	for h := range hashes(0, 100_000) {
		w.Add(h)
	}
	for b.Loop() {
		_ = w.Estimate()
	}
}
