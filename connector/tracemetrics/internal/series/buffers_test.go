package series

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// 16-bit interval bucket counters carry their wraps, so no count is ever lost.
func TestIntervalBucketCountersCarryWraps(t *testing.T) {
	var d DeltaFamily
	row := d.NewRow(7, 1, 3, false)
	d.Buckets.Row(int(row), 3)[1] = bucketWrap - 2
	for range 5 {
		d.Observe(int(row), 3, 1)
	}
	d.Observe(int(row), 3, 2)
	require.Equal(t, []uint64{0, bucketWrap + 3, 1}, d.BucketCounts(int(row), 3, nil))

	totals := []uint64{1, 2, 3}
	d.AddBucketCounts(int(row), 3, totals)
	require.Equal(t, []uint64{1, bucketWrap + 5, 4}, totals, "added to running totals, wraps included")

	d.Reset()
	row = d.NewRow(7, 2, 3, false)
	d.Observe(int(row), 3, 1)
	require.Equal(t, []uint64{0, 1, 0}, d.BucketCounts(int(row), 3, nil), "the next interval starts without the carries")
}

// A flushed interval gives its rows, bucket counts and new-series announcements back, however
// large it was; a reused first chunk starts every row at zero.
func TestDeltaBufferGivesItsRowsBack(t *testing.T) {
	const nb = 17
	var d DeltaFamily
	fill := func(n int) {
		for id := 0; id < n; id++ {
			d.Observe(int(d.NewRow(uint32(id), 1, nb, false)), nb, id%nb)
			d.NewSeries = append(d.NewSeries, AnnouncedSeries{ID: uint32(id)})
		}
	}
	fill(100_000) // the burst
	require.Len(t, d.Rows.chunks, (100_000+rowsPerChunk-1)/rowsPerChunk)
	d.Reset()
	require.Len(t, d.Rows.chunks, 1, "a flushed interval gives its rows back")
	require.Len(t, d.Buckets.chunks, 1, "a flushed interval gives its bucket counts back")
	require.Zero(t, cap(d.NewSeries), "a burst's announcements do not outlive it")
	for id := range 100_000 {
		require.False(t, d.Touched(uint32(id)), "reset unmarks every series")
	}
	fill(1000) // quiet again
	d.Reset()
	require.LessOrEqual(t, cap(d.NewSeries), shrinkMin)
	fill(10)
	require.Equal(t, 10, d.Rows.Len())
	require.Len(t, d.Rows.chunks, 1)
	require.Len(t, d.Buckets.chunks, 1)
	for row := range 10 {
		want := make([]uint16, nb)
		want[row%nb] = 1
		require.Equal(t, want, d.Buckets.Row(row, nb), "a reused chunk's rows start at zero")
		require.Equal(t, DeltaRow{ID: uint32(row), ExOff: -1, First: 1}, *d.Rows.At(row))
	}
}

// The comments and the README's per-structure table count an interval row as 40 bytes: a
// field added to deltaRow must show up here.
func TestDeltaRowIs40Bytes(t *testing.T) {
	require.EqualValues(t, 40, unsafe.Sizeof(DeltaRow{}))
}
