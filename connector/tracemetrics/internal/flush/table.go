package flush // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/flush"

import (
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// flushTable is the flusher's view of one family's series, by id.
type flushTable struct {
	fam    *series.Family
	keys   [][]byte // the aggregator's key chunks, as of the buffer being processed
	keyRef []uint64
	keyLen []uint32 // 0: free
	res    []uint32
	start  []int64 // cumulative: creation time; delta: last export time, 0 before the first
	// Cumulative totals.
	count   []uint64
	sum     []float64
	buckets []uint64           // explicit: nb per id
	expo    []series.ExpoState // exponential: by id
	slab    series.Slab
}

func (t *flushTable) key(id uint32) []byte { return series.KeyAt(t.keys, t.keyRef[id], t.keyLen[id]) }

func (t *flushTable) add(ns *series.AnnouncedSeries, nb int, isDelta bool) {
	id := int(ns.ID)
	n := id + 1
	t.keyRef = series.Grow(t.keyRef, n)
	t.keyLen = series.Grow(t.keyLen, n)
	t.res = series.Grow(t.res, n)
	t.start = series.Grow(t.start, n)
	t.keyRef[id] = ns.KeyRef
	t.keyLen[id] = ns.KeyLen
	t.res[id] = ns.Res
	t.start[id] = ns.Created
	if isDelta {
		t.start[id] = 0
		return
	}
	t.count = series.Grow(t.count, n)
	t.sum = series.Grow(t.sum, n)
	t.count[id], t.sum[id] = 0, 0
	switch {
	case nb > 0:
		t.buckets = series.Grow(t.buckets, n*nb)
		clear(t.buckets[id*nb : n*nb])
	case t.fam.Duration:
		t.expo = series.Grow(t.expo, n)
		t.expo[id] = series.NewExpoState()
	}
}

func (t *flushTable) drop(id uint32) {
	t.keyLen[id] = 0
	if int(id) < len(t.expo) {
		t.expo[id].Sketch.Free(&t.slab)
	}
}

// merge adds an interval's rows to the cumulative totals.
func (t *flushTable) merge(d *series.DeltaFamily, nb int, expoSize int32) {
	for i := range d.Rows.Len() {
		r := d.Rows.At(i)
		id := r.ID
		t.count[id] += r.Count
		if !t.fam.Duration {
			continue
		}
		t.sum[id] += r.Sum
		if nb > 0 {
			d.AddBucketCounts(i, nb, t.buckets[int(id)*nb:int(id+1)*nb])
			continue
		}
		e, de := &t.expo[id], d.Expo.At(i)
		e.Zero += de.Zero
		e.Min = min(e.Min, de.Min)
		e.Max = max(e.Max, de.Max)
		e.Sketch.Merge(&t.slab, &de.Sketch, &d.Slab, expoSize)
	}
	if t.slab.WantsCompaction() {
		t.slab = t.slab.Compact(t.expo)
	}
}
