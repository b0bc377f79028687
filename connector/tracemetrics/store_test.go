package tracemetrics

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// 32-bit interval bucket counters carry their wraps, so no count is ever lost.
func TestIntervalBucketCountersCarryWraps(t *testing.T) {
	var d deltaFamily
	row := d.newRow(7, 1, 3, false)
	d.buckets[int(row)*3+1] = 1<<32 - 2
	for range 5 {
		d.observe(int(row)*3 + 1)
	}
	d.observe(int(row)*3 + 2)
	require.Equal(t, []uint64{0, 1<<32 + 3, 1}, d.bucketCounts(int(row), 3, nil))

	ft := &flushTable{fam: &family{duration: true}}
	ft.add(&newSeries{id: 7, keyLen: 1}, 3, false)
	d.rows[row].count = 1<<32 + 4
	ft.merge(&d, 3, 0)
	require.Equal(t, []uint64{0, 1<<32 + 3, 1}, ft.buckets[7*3:8*3])
}
