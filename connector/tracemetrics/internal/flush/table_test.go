package flush

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// A flushed interval's 16-bit bucket counters reach the cumulative totals with their wraps, so
// no count is ever lost.
func TestFlushTableMergeCarriesWraps(t *testing.T) {
	const wrap = 1 << 16
	var d series.DeltaFamily
	row := d.NewRow(7, 1, 3, false)
	d.Buckets.Row(int(row), 3)[1] = wrap - 2
	for range 5 {
		d.Observe(int(row), 3, 1)
	}
	d.Observe(int(row), 3, 2)
	ft := &flushTable{fam: &series.Family{Duration: true}}
	ft.add(&series.AnnouncedSeries{ID: 7, KeyLen: 1}, 3, false)
	d.Rows.At(int(row)).Count = 1<<32 + 4
	ft.merge(&d, 3, 0)
	require.Equal(t, []uint64{0, wrap + 3, 1}, ft.buckets[7*3:8*3])
}
