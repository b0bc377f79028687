package tracemetrics

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// 16-bit interval bucket counters carry their wraps, so no count is ever lost.
func TestIntervalBucketCountersCarryWraps(t *testing.T) {
	var d deltaFamily
	row := d.newRow(7, 1, 3, false)
	d.buckets.row(int(row), 3)[1] = bucketWrap - 2
	for range 5 {
		d.observe(int(row), 3, 1)
	}
	d.observe(int(row), 3, 2)
	require.Equal(t, []uint64{0, bucketWrap + 3, 1}, d.bucketCounts(int(row), 3, nil))

	ft := &flushTable{fam: &family{duration: true}}
	ft.add(&newSeries{id: 7, keyLen: 1}, 3, false)
	d.rows.at(int(row)).count = 1<<32 + 4
	ft.merge(&d, 3, 0)
	require.Equal(t, []uint64{0, bucketWrap + 3, 1}, ft.buckets[7*3:8*3])

	d.reset()
	row = d.newRow(7, 2, 3, false)
	d.observe(int(row), 3, 1)
	require.Equal(t, []uint64{0, 1, 0}, d.bucketCounts(int(row), 3, nil), "the next interval starts without the carries")
}

// A flushed interval gives its rows, bucket counts and new-series announcements back, however
// large it was; a reused first chunk starts every row at zero.
func TestDeltaBufferGivesItsRowsBack(t *testing.T) {
	const nb = 17
	var d deltaFamily
	fill := func(n int) {
		for id := 0; id < n; id++ {
			d.observe(int(d.newRow(uint32(id), 1, nb, false)), nb, id%nb)
			d.newSeries = append(d.newSeries, newSeries{id: uint32(id)})
		}
	}
	fill(100_000) // the burst
	require.Len(t, d.rows.chunks, (100_000+rowsPerChunk-1)/rowsPerChunk)
	d.reset()
	require.Len(t, d.rows.chunks, 1, "a flushed interval gives its rows back")
	require.Len(t, d.buckets.chunks, 1, "a flushed interval gives its bucket counts back")
	require.Zero(t, cap(d.newSeries), "a burst's announcements do not outlive it")
	for id := range 100_000 {
		require.False(t, d.touched(uint32(id)), "reset unmarks every series")
	}
	fill(1000) // quiet again
	d.reset()
	require.LessOrEqual(t, cap(d.newSeries), shrinkMin)
	fill(10)
	require.Equal(t, 10, d.rows.n)
	require.Len(t, d.rows.chunks, 1)
	require.Len(t, d.buckets.chunks, 1)
	for row := range 10 {
		want := make([]uint16, nb)
		want[row%nb] = 1
		require.Equal(t, want, d.buckets.row(row, nb), "a reused chunk's rows start at zero")
		require.Equal(t, deltaRow{id: uint32(row), exOff: -1, first: 1}, *d.rows.at(row))
	}
}

// The comments and the README's per-structure table count an interval row as 40 bytes: a
// field added to deltaRow must show up here.
func TestDeltaRowIs40Bytes(t *testing.T) {
	require.EqualValues(t, 40, unsafe.Sizeof(deltaRow{}))
}
