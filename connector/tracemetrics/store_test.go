package tracemetrics

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// 32-bit interval bucket counters carry their wraps, so no count is ever lost.
func TestIntervalBucketCountersCarryWraps(t *testing.T) {
	var d deltaFamily
	row := d.newRow(7, 1, 3, false)
	d.buckets.row(int(row), 3, false)[1] = 1<<32 - 2
	for range 5 {
		d.observe(int(row), 3, 1)
	}
	d.observe(int(row), 3, 2)
	require.Equal(t, []uint64{0, 1<<32 + 3, 1}, d.bucketCounts(int(row), 3, nil))

	ft := &flushTable{fam: &family{duration: true}}
	ft.add(&newSeries{id: 7, keyLen: 1}, 3, false)
	d.rows[row].count = 1<<32 + 4
	ft.merge(&d, 3, 0)
	require.Equal(t, []uint64{0, 1<<32 + 3, 1}, ft.buckets[7*3:8*3])
}

// After a burst, an interval that uses under a quarter of a buffer's capacity gives the room
// back; an interval that uses it keeps it. Bucket counts and new-series announcements are
// given back at every reset.
func TestDeltaBufferShrinksAfterABurst(t *testing.T) {
	const nb = 17
	var d deltaFamily
	fill := func(n int) {
		for id := 0; id < n; id++ {
			d.observe(int(d.newRow(uint32(id), 1, nb, false)), nb, id%nb)
			d.newSeries = append(d.newSeries, newSeries{id: uint32(id)})
		}
	}
	fill(100_000) // the burst
	d.reset()
	require.GreaterOrEqual(t, cap(d.rows), 100_000, "the burst's own interval keeps its room")
	require.Len(t, d.buckets.chunks, 1, "a flushed interval gives its bucket counts back")
	require.Zero(t, cap(d.newSeries), "a burst's announcements do not outlive it")
	fill(90_000)
	d.reset()
	require.GreaterOrEqual(t, cap(d.rows), 90_000, "an interval that used the room keeps it")
	fill(1000) // quiet again
	d.reset()
	require.Zero(t, cap(d.rows))
	require.Len(t, d.buckets.chunks, 1)
	require.LessOrEqual(t, cap(d.newSeries), shrinkMin)
	fill(10)
	require.Len(t, d.rows, 10)
	require.Len(t, d.buckets.chunks, 1)
	for row := range 10 {
		want := make([]uint32, nb)
		want[row%nb] = 1
		require.Equal(t, want, d.buckets.row(row, nb, false), "a reused chunk's rows start at zero")
	}
}
