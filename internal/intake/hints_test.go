package intake

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// A hint is the largest size recorded, bounded by the limit, whatever the order of the raises
// and however many producers raise at once.
func TestSizeHintsKeepTheLargestBounded(t *testing.T) {
	h := NewSizeHints(2, 1000)
	var wg sync.WaitGroup
	for p := range 8 {
		wg.Go(func() {
			for n := range 500 {
				h.Raise(0, n*8+p)
				h.Raise(1, 10_000)
			}
		})
	}
	wg.Wait()
	require.Equal(t, int64(1000), h.Get(0), "499*8+7 is past the limit")
	require.Equal(t, int64(1000), h.Get(1), "bounded")
	h.Raise(0, 3)
	require.Equal(t, int64(1000), h.Get(0), "a smaller size never lowers a hint")
}

// Rotate forgets what came before the interval that ends: a large request sizes batches for
// the rest of its interval and the next one, not after.
func TestSizeHintsForgetOlderIntervals(t *testing.T) {
	h := NewSizeHints(1, 1<<20)
	h.Raise(0, 5000)
	h.Rotate()
	require.Equal(t, int64(5000), h.Get(0), "the interval that just ended still counts")
	h.Raise(0, 10)
	require.Equal(t, int64(5000), h.Get(0))
	h.Rotate()
	require.Equal(t, int64(10), h.Get(0), "an interval of small requests only")
	h.Rotate()
	require.Zero(t, h.Get(0), "no request for two intervals")
}

func TestReserveAndRegrow(t *testing.T) {
	s := make([]int, 3, 4)
	r := Reserve(s, 2)
	require.Empty(t, r)
	require.Equal(t, 4, cap(r), "room enough: the same array")
	r = Reserve(s, 100)
	require.Empty(t, r)
	require.GreaterOrEqual(t, cap(r), 100)

	g := Regrow([]int{1, 2}, 100)
	require.Equal(t, []int{1, 2}, g, "the content is kept")
	require.GreaterOrEqual(t, cap(g), 100)
	same := Regrow(g, 10)
	require.Equal(t, cap(g), cap(same))
}
