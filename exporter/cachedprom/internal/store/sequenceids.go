package store // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"

import (
	"hash/maphash"
	"slices"
	"unsafe"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/mem"
	"github.com/otelcol-red/otelcol-red/internal/hash"
)

// sequenceIDs gives each distinct sequence of T a small id and stores it
// once; ids are counted by reference and reused once freed. It holds the
// label pairs (their bytes) and the label sets (their pairs' ids). The
// values live in large append-only chunks off the Go heap and the per-id
// fields in flat slices, so nothing here is a per-value Go object for the
// garbage collector to scan. T must hold no pointers.
type sequenceIDs[T comparable] struct {
	chunkLen int            // values per chunk (more for a longer sequence)
	chunks   []mem.Chunk[T] // the arenas
	used     int            // values used in the last chunk
	off      []uint64       // per id: chunk<<32 | offset in the chunk
	size     []uint32       // per id: length
	refs     []uint32       // per id: holders; 0 means the id is free
	free     []uint32       // ids to reuse
	// byValue finds ids by the hash of their values: its 32-bit tags sift
	// the candidates and equality is decided on the stored values, so no
	// hash is kept per id (a removal hashes the values again).
	byValue hash.Index
	seed    maphash.Seed

	live    int // ids in use
	liveLen int // values of live ids
	deadLen int // values of freed ids still in the chunks
}

func newSequenceIDs[T comparable](chunkLen int) sequenceIDs[T] {
	return sequenceIDs[T]{chunkLen: chunkLen, seed: maphash.MakeSeed()}
}

// values returns the stored sequence; valid until the next compact.
func (x *sequenceIDs[T]) values(id uint32) []T {
	o := x.off[id]
	c := x.chunks[o>>32].Values
	start := uint32(o)
	return c[start : start+x.size[id] : start+x.size[id]]
}

func (x *sequenceIDs[T]) hashOf(v []T) uint64 {
	var zero T
	return maphash.Bytes(x.seed, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*int(unsafe.Sizeof(zero))))
}

// find returns the id of v, if stored, and v's hash.
func (x *sequenceIDs[T]) find(v []T) (id uint32, h uint64, ok bool) {
	h = x.hashOf(v)
	p := x.byValue.Probe(h)
	for id, ok := p.Next(); ok; id, ok = p.Next() {
		if slices.Equal(x.values(id), v) {
			return id, h, true
		}
	}
	return 0, h, false
}

// add stores v (not yet stored, hash h) with no references and returns its
// id; the bool is true when the id is new rather than reused.
func (x *sequenceIDs[T]) add(v []T, h uint64) (uint32, bool) {
	var id uint32
	fresh := false
	if n := len(x.free); n > 0 {
		id = x.free[n-1]
		x.free = x.free[:n-1]
	} else {
		id, fresh = uint32(len(x.off)), true
		x.off = append(x.off, 0)
		x.size = append(x.size, 0)
		x.refs = append(x.refs, 0)
	}
	x.off[id] = x.store(v)
	x.size[id] = uint32(len(v))
	x.byValue.Insert(h, id)
	x.live++
	x.liveLen += len(v)
	return id, fresh
}

// store appends v to the last chunk, or to a new one, and returns its place.
func (x *sequenceIDs[T]) store(v []T) uint64 {
	n := len(x.chunks)
	if n == 0 || x.used+len(v) > len(x.chunks[n-1].Values) {
		x.chunks = append(x.chunks, mem.NewChunk[T](max(x.chunkLen, len(v))))
		x.used = 0
		n++
	}
	off := x.used
	x.used += copy(x.chunks[n-1].Values[off:], v)
	return uint64(n-1)<<32 | uint64(off)
}

func (x *sequenceIDs[T]) ref(id uint32) { x.refs[id]++ }

// unref drops one reference; the last one frees the id (true).
func (x *sequenceIDs[T]) unref(id uint32) bool {
	x.refs[id]--
	if x.refs[id] > 0 {
		return false
	}
	x.byValue.Delete(x.hashOf(x.values(id)), id)
	x.live--
	x.liveLen -= int(x.size[id])
	x.deadLen += int(x.size[id])
	x.free = append(x.free, id)
	return true
}

// compact gives memory back after a cardinality burst: when most stored
// values belong to freed ids, the live ones are copied into fresh chunks;
// the table shrinks when mostly empty; with nothing live, the per-id slices
// go too (true: the caller drops its own per-id state). Each is linear in
// what is live, and rare.
func (x *sequenceIDs[T]) compact() bool {
	if x.deadLen > x.chunkLen && x.deadLen > x.liveLen {
		old := x.chunks
		x.chunks, x.used = nil, 0
		for id := range x.off {
			if x.refs[id] == 0 {
				continue
			}
			o := x.off[id]
			start := uint32(o)
			x.off[id] = x.store(old[o>>32].Values[start : start+x.size[id]])
		}
		for i := range old {
			old[i].Free()
		}
		x.deadLen = 0
	}
	x.byValue.Fit()
	if x.live == 0 && len(x.off) > 4096 {
		x.off, x.size, x.refs, x.free = nil, nil, nil, nil
		x.byValue.Reset()
		return true
	}
	return false
}

// release gives the chunks back; the values must not be used afterwards.
func (x *sequenceIDs[T]) release() {
	for i := range x.chunks {
		x.chunks[i].Free()
	}
	x.chunks = nil
}

// mappedBytes is what the chunks map.
func (x *sequenceIDs[T]) mappedBytes() int {
	n := 0
	for i := range x.chunks {
		n += x.chunks[i].Mapped()
	}
	return n
}
