package aggregate // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/aggregate"

import (
	"bytes"
	"math"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/hash"
)

// seriesTable holds the identity of every series of one family: the hash index, and per id
// the canonical key bytes, the resource, the last time a span was seen and the series' row in
// the active delta buffer. The per-id fields sit in one 32-byte record, so resolving a span
// touches the index slot, this record, the key bytes and the row: no pointer, few cache lines.
type seriesTable struct {
	fam   *series.Family
	index hash.Index
	meta  []seriesMeta
	free  []uint32
	n     int // live series, overflow series excluded
	keys  keyArena

	keyHash func([]byte) uint64 // the hash index's hash of identities (remove needs it)

	carries []float64 // by id: remainder of the weighted count (carry); empty until weighted
}

type seriesMeta struct {
	keyRef   uint64
	keyLen   uint32 // 0: id free
	res      uint32
	row      int32  // row in the active delta buffer, valid when epoch is current
	epoch    uint32 // aggregator epoch (flush count) of row
	lastSeen int64  // batch time of the series' last span, stamped as each batch is applied
}

func (t *seriesTable) key(id uint32) []byte {
	m := &t.meta[id]
	return t.keys.get(m.keyRef, m.keyLen)
}

// find returns the series of resource rid whose identity is ident, among the ids whose key
// hashes to h: an equal hash is not enough, the identities are compared, so a collision never
// merges two series.
func (t *seriesTable) find(h uint64, rid uint32, ident []byte) (uint32, bool) {
	p := t.index.Probe(h)
	for id, ok := p.Next(); ok; id, ok = p.Next() {
		if t.meta[id].res == rid && bytes.Equal(series.Identity(t.key(id), t.fam), ident) {
			return id, true
		}
	}
	return 0, false
}

// touchAhead is how many series of a batch touchSeries reads ahead of apply; minTouch the
// fewest worth a pass of their own (the reducer reads spans ahead by the same counts).
const (
	touchAhead = 64
	minTouch   = 8
)

// touchMinSeries is the number of live series from which apply reads ahead: about where the
// hash index, the series records and the key bytes (README, per-structure table) outgrow the
// CPU caches. Below it the read-ahead costs without saving (BenchmarkApply series=1k).
const touchMinSeries = 1 << 14

// touchSeries reads, for each of series, the index slot of its family's table where its
// lookup starts, then the record and first key byte of the id found there; apply calls it
// for the next touchAhead series of a batch. With many series the table is not in the
// CPU caches and resolving one series is a chain of dependent loads that apply cannot overlap
// with the next series'; these loops are short enough for many misses to be in flight at once
// (the same reasoning as touchSpans). The result only keeps the compiler from dropping the
// reads. Below touchMinSeries the tables stay in the caches and the read-ahead would only
// read everything twice, so apply skips it.
func touchSeries(tables []*seriesTable, series []series.BatchSeries) uint32 {
	var t uint32
	for i := range series {
		t ^= tables[series[i].Fam].index.First(series[i].Hash)
	}
	for i := range series {
		s := &series[i]
		tab := tables[s.Fam]
		if id1 := tab.index.First(s.Hash); id1 != 0 && int(id1) <= len(tab.meta) {
			m := &tab.meta[id1-1]
			t ^= uint32(m.row)
			if m.keyLen > 0 {
				t ^= uint32(tab.keys.get(m.keyRef, m.keyLen)[0])
			}
			t ^= touchCarry(tab, id1-1)
		}
	}
	return t
}

// insert adds the series with key, whose identity hashes to h, and returns its id.
func (t *seriesTable) insert(key []byte, h uint64, rid uint32, ts int64) uint32 {
	id := t.store(key, rid, ts)
	t.index.Insert(h, id)
	t.n++
	return id
}

// insertOverflow adds a resource's overflow series and returns its id. It is not in the hash
// index (the resource points at it) and not counted in n, which the limits compare with.
func (t *seriesTable) insertOverflow(key []byte, rid uint32, ts int64) uint32 {
	return t.store(key, rid, ts)
}

func (t *seriesTable) store(key []byte, rid uint32, ts int64) uint32 {
	id := t.alloc()
	t.meta[id] = seriesMeta{keyRef: t.keys.add(key), keyLen: uint32(len(key)), res: rid, lastSeen: ts}
	t.resetCarry(id)
	return id
}

// remove drops series id: its key bytes become waste in the arena (see keyArena). The id
// itself is reused only once the flusher has forgotten it (aggregator.reclaim). The caller
// keeps n, the count the caps compare with (a demoted series is not in it).
func (t *seriesTable) remove(id uint32) {
	m := &t.meta[id]
	if key := t.key(id); !series.IsOverflowKey(key) {
		t.index.Delete(t.keyHash(series.Identity(key, t.fam)), id)
	}
	t.keys.release(m.keyLen)
	*m = seriesMeta{}
}

func (t *seriesTable) alloc() uint32 {
	if id, ok := reuseID(&t.free); ok {
		return id
	}
	id := uint32(len(t.meta))
	t.meta = append(t.meta, seriesMeta{})
	return id
}

// compactKeys copies the live keys into fresh chunks and lists the moves for the flusher.
func (t *seriesTable) compactKeys(moved []series.KeyMove) []series.KeyMove {
	var fresh keyArena
	for id := range t.meta {
		if m := &t.meta[id]; m.keyLen > 0 {
			m.keyRef = fresh.add(t.keys.get(m.keyRef, m.keyLen))
			moved = append(moved, series.KeyMove{ID: uint32(id), KeyRef: m.keyRef})
		}
	}
	t.keys = fresh
	return moved
}

// keyArena stores variable-length keys in large chunks, addressed by (chunk<<32 | offset).
// Millions of keys cost the GC a handful of pointers.
//
// The aggregator writes it and the flusher reads it without a lock: a chunk is allocated at its
// full length and never resized, and bytes are written once, before the key is announced to the
// flusher in a buffer (the channel send orders them). The flusher reads through a copy of the
// chunk list taken at the swap, so it only ever reads chunks and bytes that no longer change.
// Released keys are counted as waste; when waste outweighs live bytes the aggregator copies the
// live keys into fresh chunks and sends the new references with the next buffer. The old chunks
// are left untouched for the flusher until it switches, then collected.
type keyArena struct {
	chunks [][]byte
	used   int // bytes used in the last chunk
	live   int
	waste  int
}

const arenaChunk = 1 << 20

func (a *keyArena) add(b []byte) uint64 {
	n := len(b)
	last := len(a.chunks) - 1
	if last < 0 || len(a.chunks[last])-a.used < n {
		a.chunks = append(a.chunks, make([]byte, max(arenaChunk, n)))
		last++
		a.used = 0
	}
	off := a.used
	copy(a.chunks[last][off:], b)
	a.used += n
	a.live += n
	return uint64(last)<<32 | uint64(off)
}

func (a *keyArena) get(r uint64, n uint32) []byte { return series.KeyAt(a.chunks, r, n) }

func (a *keyArena) release(n uint32) {
	a.live -= int(n)
	a.waste += int(n)
}

func (a *keyArena) wantsCompaction() bool { return a.waste > 4*arenaChunk && a.waste > a.live }

// Integer counts. Calls and bucket counts are integers, adjusted counts are not (p = 0.3 is
// 3.33 spans). Each series carries the remainder of its weighted count (seriesTable.carry,
// across batches and flush intervals, delta or cumulative): the integers it emits add up to
// the floor of its weighted total plus the first carry, so they never drift 1 or more from
// the exact total, are exact for integer adjusted counts (any power-of-two probability), and
// are deterministic. In a family with durations each span's integer goes to both the count
// and the span's bucket, so a histogram's count is its calls and its buckets' sum; a family
// without durations (events, calls split by calls_dimensions) adds a batch's series weight
// at once. Every span with weight >= 1 adds at least 1.

// carry returns the remainder of series id, growing the slice on first use: tables of
// unweighted traffic never hold one.
func (t *seriesTable) carry(id uint32) *float64 {
	if int(id) >= len(t.carries) {
		t.carries = series.Grow(t.carries, int(id)+1)
	}
	return &t.carries[id]
}

// touchCarry reads the carry of id, if the table has weights, for touchSeries: the
// observations of a weighted batch find it cached.
func touchCarry(t *seriesTable, id uint32) uint32 {
	if int(id) < len(t.carries) {
		return uint32(math.Float64bits(t.carries[id]))
	}
	return 0
}

// resetCarry forgets the remainder of an id being reused by a new series.
func (t *seriesTable) resetCarry(id uint32) {
	if int(id) < len(t.carries) {
		t.carries[id] = 0
	}
}

// reuseID takes an id from the free list, if it holds one.
func reuseID(free *[]uint32) (uint32, bool) {
	n := len(*free)
	if n == 0 {
		return 0, false
	}
	id := (*free)[n-1]
	*free = (*free)[:n-1]
	return id, true
}
