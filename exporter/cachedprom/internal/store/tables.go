package store // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"

// tables is every series' state: the families, the rows and their label
// sets, the resources, and the side state of the kinds that need more than
// a row (bucket counts, exponential histograms, quantiles, exemplars, the
// writers of merged series). The Store's lock guards it; ingest
// (ingest.go, temporality.go) writes it and the renderer's frames
// (frame.go) read it.
type tables struct {
	families  families
	rows      rowTable
	labels    *labelSets
	resources resources
	buckets   bucketArena
	bounds    boundSets
	// Side state of the rare kinds, keyed by row. Exponential
	// histograms' state is pointer-free, off the heap (expslab.go): one
	// slot per row in chunks mapped when first needed.
	exp       expSlab
	quantiles map[uint32][]quantile
	exemplars exemplars
	writers   writers
	// keepExemplars keeps the exemplars of counters and explicit
	// histograms, which only OpenMetrics shows (enable_open_metrics);
	// exponential histograms' are always kept, for the protobuf body.
	keepExemplars bool

	overflowLbl uint32 // label set of overflow series, when held
	hasOverflow bool

	events Events // since the last Store.TakeEvents

	// scratch buffers of ingest, reused across data points
	bkts   []uint64      // a histogram row's counts while a point is applied
	expAdd [2]expBuckets // a delta point's sides while added (addBuckets)
}

type quantile struct{ q, v float64 }

func newTables(keepExemplars bool) tables {
	return tables{
		families:      newFamilies(),
		labels:        newLabelSets(),
		resources:     newResources(),
		bounds:        newBoundSets(),
		quantiles:     map[uint32][]quantile{},
		exemplars:     exemplars{},
		writers:       writers{},
		keepExemplars: keepExemplars,
	}
}

// newRow creates the series of family fam with label set lbl, first written
// at now by the OTLP series ident of resource res (nil for none; an overflow
// series has none).
func (t *tables) newRow(fam, lbl uint32, kind Kind, ident uint64, now int64, res *resource, overflow bool) uint32 {
	id := t.rows.alloc()
	r := t.rows.at(id)
	*r = seriesRow{fam: fam, lbl: lbl, pos: t.families.addRow(fam, id), kind: kind, flags: rowUsed, ident: ident, seen: now}
	if overflow {
		r.flags |= rowOverflow
	} else if res != nil {
		r.res = res.id
		res.refs++
	}
	t.labels.ref(lbl)
	t.rows.hold(fam, lbl, id)
	return id
}

// remove deletes row id and everything only it held.
func (t *tables) remove(id uint32) {
	r := t.rows.at(id)
	t.rows.drop(r.fam, r.lbl, id)
	moved := t.families.removeRow(r.fam, r.pos)
	t.rows.at(moved).pos = r.pos
	t.labels.unref(r.lbl)
	if r.flags&rowOverflow != 0 && t.hasOverflow && t.labels.refs(t.overflowLbl) == 1 {
		t.labels.unref(t.overflowLbl)
		t.hasOverflow = false
	}
	if r.res != 0 {
		t.resources.unref(r.res)
	}
	t.buckets.freeRow(r)
	t.exp.free(id)
	delete(t.quantiles, id)
	delete(t.exemplars, id)
	if r.flags&(rowMerged|rowOverflow) != 0 {
		t.writers.forgetRow(id)
	}
	t.rows.release(id)
}

// expire removes the series not updated since cutoff (unix nanoseconds) and
// returns how many it removed.
func (t *tables) expire(cutoff int64) int {
	n := 0
	for id := 0; id < t.rows.count; id++ {
		r := t.rows.at(uint32(id))
		if r.flags&rowUsed != 0 && r.seen < cutoff {
			t.remove(uint32(id))
			n++
		}
	}
	t.writers.forgetQuiet(cutoff)
	t.resources.sweep()
	if n > 0 {
		t.compact()
	}
	return n
}

// compact gives memory back after a cardinality burst: label bytes and
// indexes are rebuilt when most of them are dead; with no series left,
// every chunk is released.
func (t *tables) compact() {
	t.labels.compact()
	t.rows.fit()
	if t.rows.live == 0 {
		t.buckets.release()
		t.exp.release()
		t.writers = writers{}
	}
}

// release gives the off-heap memory back; the tables are empty and inert
// afterwards.
func (t *tables) release() {
	t.rows.reset()
	t.buckets.release()
	t.exp.release()
	t.labels.release()
	t.families.reset()
	clear(t.resources.byKey)
}

// mapped is the memory the rows, the bucket counts and the label sets map
// outside the heap.
func (t *tables) mapped() int {
	return t.rows.mapped() + t.buckets.mapped() + t.labels.mapped()
}
