package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"math"
	"slices"
)

// keyArena stores variable-length keys in large chunks, addressed by (chunk<<32 | offset).
// Millions of keys cost the GC a handful of pointers. Released keys are counted as waste;
// the owner rebuilds the arena when waste outweighs live bytes.
type keyArena struct {
	chunks [][]byte
	live   int
	waste  int
}

const arenaChunk = 1 << 20

func (a *keyArena) add(b []byte) uint64 {
	n := len(b)
	last := len(a.chunks) - 1
	if last < 0 || cap(a.chunks[last])-len(a.chunks[last]) < n {
		a.chunks = append(a.chunks, make([]byte, 0, max(arenaChunk, n)))
		last++
	}
	off := len(a.chunks[last])
	a.chunks[last] = append(a.chunks[last], b...)
	a.live += n
	return uint64(last)<<32 | uint64(off)
}

func (a *keyArena) get(r uint64, n uint32) []byte {
	c := a.chunks[r>>32]
	off := uint32(r)
	return c[off : off+n : off+n]
}

func (a *keyArena) release(n uint32) {
	a.live -= int(n)
	a.waste += int(n)
}

func (a *keyArena) wantsCompaction() bool { return a.waste > 4*arenaChunk && a.waste > a.live }

func (a *keyArena) bytes() int {
	total := 0
	for _, c := range a.chunks {
		total += cap(c)
	}
	return total
}

// compactKeys moves the keys of live ids (lens[id] > 0) into a fresh arena.
func compactKeys(a *keyArena, refs []uint64, lens []uint32) {
	var fresh keyArena
	for id, n := range lens {
		if n > 0 {
			refs[id] = fresh.add(a.get(refs[id], n))
		}
	}
	*a = fresh
}

// grow returns s with length at least n, new elements zero.
func grow[T any](s []T, n int) []T {
	if n <= len(s) {
		return s
	}
	if n <= cap(s) {
		s = s[:n]
		return s
	}
	s = slices.Grow(s, max(n, 2*cap(s))-len(s))
	return s[:n]
}

// appendZeros appends n zero values to s.
func appendZeros[T any](s []T, n int) []T {
	l := len(s)
	s = grow(s, l+n)
	clear(s[l:])
	return s
}

// deltaRow is what one series accumulated during the current interval.
type deltaRow struct {
	id       uint32
	exOff    int32 // first exemplar slot in deltaFamily.exemplars, -1 when none
	exN      int32
	first    int64 // batch time of the first span this interval
	last     int64 // batch time of the last span this interval
	count    uint64
	zero     uint64 // exponential: zero durations
	sum      float64
	min, max float64
	sketch   expoSketch
}

// newSeries announces a series created by the aggregator to the flusher.
type newSeries struct {
	id      uint32
	res     uint32
	created int64
	key     ref // in deltaFamily.newKeys
}

// deltaFamily is one family's part of a deltaBuffer.
type deltaFamily struct {
	slot      []int32 // by series id: row+1, 0 when untouched this interval
	rows      []deltaRow
	buckets   []uint64 // explicit: nb per row
	slab      slab     // exponential sketches of the rows
	exemplars []exemplar
	newSeries []newSeries
	newKeys   []byte
	expired   []uint32 // ids expired at this swap; reusable once the flusher hands the buffer back
}

// newResource announces a resource to the flusher with its output attributes.
type newResource struct {
	id    uint32
	attrs ref // in deltaBuffer.resAttrs
}

// deltaBuffer is the unit of double buffering: the aggregator fills one while the flusher
// turns the other into pmetric.Metrics. They trade places with a pointer swap at each flush.
type deltaBuffer struct {
	ts           int64 // flush time
	final        bool
	fams         []deltaFamily
	newResources []newResource
	resAttrs     []byte
	expiredRes   []uint32
}

func newDeltaBuffer(families int) *deltaBuffer {
	return &deltaBuffer{fams: make([]deltaFamily, families)}
}

// newRow adds the row of series id, which has none in this interval, with its buckets.
func (d *deltaFamily) newRow(id uint32, ts int64, nb int) int32 {
	if int(id) >= len(d.slot) {
		d.slot = grow(d.slot, int(id)+1)
	}
	r := int32(len(d.rows))
	d.slot[id] = r + 1
	d.rows = append(d.rows, deltaRow{id: id, exOff: -1, first: ts, last: ts, min: math.Inf(1), max: math.Inf(-1)})
	if nb > 0 {
		d.buckets = appendZeros(d.buckets, nb)
	}
	return r
}

// touched reports whether id has a row this interval.
func (d *deltaFamily) touched(id uint32) bool {
	return int(id) < len(d.slot) && d.slot[id] != 0
}

// addExemplar merges a candidate into a row's bounded set (errors first, then slowest).
func (d *deltaFamily) addExemplar(r *deltaRow, limit int, e *exemplar) {
	if r.exOff < 0 {
		r.exOff = int32(len(d.exemplars))
		d.exemplars = appendZeros(d.exemplars, limit)
	}
	slots := d.exemplars[r.exOff : int(r.exOff)+limit]
	if int(r.exN) < limit {
		slots[r.exN] = *e
		r.exN++
		return
	}
	weakest := 0
	for i := 1; i < limit; i++ {
		if slots[weakest].stronger(&slots[i]) {
			weakest = i
		}
	}
	if e.stronger(&slots[weakest]) {
		slots[weakest] = *e
	}
}

// reset empties the family for the next interval; expired stays for the aggregator.
func (d *deltaFamily) reset() {
	for i := range d.rows {
		d.slot[d.rows[i].id] = 0
	}
	d.rows = d.rows[:0]
	d.buckets = d.buckets[:0]
	d.slab.reset()
	d.exemplars = d.exemplars[:0]
	d.newSeries = d.newSeries[:0]
	d.newKeys = d.newKeys[:0]
}

func (b *deltaBuffer) reset() {
	for i := range b.fams {
		b.fams[i].reset()
	}
	b.newResources = b.newResources[:0]
	b.resAttrs = b.resAttrs[:0]
	b.final = false
}
