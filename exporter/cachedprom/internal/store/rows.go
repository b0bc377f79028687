package store // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"

import (
	"slices"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/mem"
	"github.com/otelcol-red/otelcol-red/internal/hash"
)

// Kind is how a series' state is accumulated and rendered.
type Kind uint8

const (
	KindNumber Kind = iota // gauge, untyped, counter
	KindHistogram
	KindExpHistogram
	KindSummary
)

// seriesRow is the state of one exported series: a family and a label set.
// It holds no pointers, so the rows (in large chunks) cost the garbage
// collector nothing to scan. Histogram buckets live in the bucket arena,
// exponential histograms' state in its pointer-free slab (expslab.go); the
// rare kinds' extra state (summaries, exemplars, merged writers) lives in
// side maps keyed by row id.
type seriesRow struct {
	fam, lbl uint32
	pos      uint32 // index in the family's rows
	res      uint32 // resource id + 1, 0 for none
	bkt      uint32 // bucket arena offset
	nbkt     uint32 // number of OTLP buckets
	bounds   uint32 // boundSet id
	kind     Kind
	flags    uint8
	ident    uint64 // hash of the OTLP identity of the series' first writer
	ts       int64  // timestamp of the last point, unix nanoseconds
	seen     int64  // wall clock of the last update, unix nanoseconds
	value    float64
	count    uint64
	// start is the start time of what the series counts, unix nanoseconds
	// (0 unknown): the protobuf exposition's created timestamp of counters,
	// explicit histograms and summaries (see createdStart).
	start int64
}

const (
	rowUsed     uint8 = 1 << iota
	rowMerged         // cumulative writers are tracked one by one in the writers table
	rowOverflow       // the family's overflow series (max_series reached)
	rowWide           // bucket counts 64 bits wide (buckets.go)
)

// rowChunk is the number of rows per chunk: rows never move, and growing
// the table never copies it.
const rowChunk = 1 << 14

// rowTable holds the rows, in chunks outside the Go heap, and finds the row
// of a family and a label set. A label set's first two rows (row + 1; 0 for
// none) are found through setRows: a RED series' set has two, its calls
// counter and duration histogram. Further rows of a set (a set shared by
// more families) are in index, by family and label set (rowKey).
type rowTable struct {
	setRows [][2]uint32
	index   hash.Index
	chunks  []mem.Chunk[seriesRow]
	free    []uint32
	count   int // rows handed out so far: the used ones and the free list
	live    int // rows in use
}

// at returns row id.
func (t *rowTable) at(id uint32) *seriesRow {
	return &t.chunks[id/rowChunk].Values[id%rowChunk]
}

// rowKey is the hash under which the index holds the row of family fam
// and label set lbl (a 64-bit mix: the table takes its top bits).
func rowKey(fam, lbl uint32) uint64 {
	h := (uint64(fam)<<32 | uint64(lbl)) * 0x9e3779b97f4a7c15
	return h ^ h>>29
}

// find returns the row of family fam with label set lbl.
func (t *rowTable) find(fam, lbl uint32) (uint32, bool) {
	if int(lbl) < len(t.setRows) {
		for _, v := range t.setRows[lbl] {
			if v != 0 && t.at(v-1).fam == fam {
				return v - 1, true
			}
		}
	}
	p := t.index.Probe(rowKey(fam, lbl))
	for id, ok := p.Next(); ok; id, ok = p.Next() {
		if r := t.at(id); r.fam == fam && r.lbl == lbl {
			return id, true
		}
	}
	return 0, false
}

// hold makes row id of family fam and label set lbl findable.
func (t *rowTable) hold(fam, lbl, id uint32) {
	if int(lbl) >= len(t.setRows) {
		t.setRows = slices.Grow(t.setRows, int(lbl)+1-len(t.setRows))[:int(lbl)+1]
	}
	for i, v := range t.setRows[lbl] {
		if v == 0 {
			t.setRows[lbl][i] = id + 1
			return
		}
	}
	t.index.Insert(rowKey(fam, lbl), id)
}

// drop undoes hold.
func (t *rowTable) drop(fam, lbl, id uint32) {
	for i, v := range t.setRows[lbl] {
		if v == id+1 {
			t.setRows[lbl][i] = 0
			return
		}
	}
	t.index.Delete(rowKey(fam, lbl), id)
}

// alloc returns a row to fill, counted in use: a freed one, or the next of
// the last chunk (mapping a new chunk when it is full).
func (t *rowTable) alloc() uint32 {
	t.live++
	if n := len(t.free); n > 0 {
		id := t.free[n-1]
		t.free = t.free[:n-1]
		return id
	}
	id := uint32(t.count)
	if id%rowChunk == 0 {
		t.chunks = append(t.chunks, mem.NewChunk[seriesRow](rowChunk))
	}
	t.count++
	return id
}

// release clears row id and keeps it for reuse.
func (t *rowTable) release(id uint32) {
	*t.at(id) = seriesRow{}
	t.free = append(t.free, id)
	t.live--
}

// fit shrinks the index when mostly empty and, once no row is in use, gives
// every chunk back.
func (t *rowTable) fit() {
	t.index.Fit()
	if t.live == 0 {
		t.setRows = nil
		t.freeChunks()
	}
}

// reset forgets every row and gives every chunk back.
func (t *rowTable) reset() {
	t.freeChunks()
	t.index.Reset()
	t.setRows, t.live = nil, 0
}

func (t *rowTable) freeChunks() {
	for i := range t.chunks {
		t.chunks[i].Free()
	}
	t.chunks, t.free, t.count = nil, nil, 0
}

// mapped is what the chunks map outside the heap.
func (t *rowTable) mapped() int {
	n := 0
	for i := range t.chunks {
		n += t.chunks[i].Mapped()
	}
	return n
}
