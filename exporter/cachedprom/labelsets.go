package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"bytes"
	"hash/maphash"
)

// labelSets interns rendered label sets (`a="x",b="y"`, sorted, escaped).
// Each distinct set is stored once and shared by every family that uses it:
// the calls counter and the duration histogram of one RED series share
// theirs. The bytes live in large append-only chunks and the per-set fields
// in flat slices, so nothing here is a per-set Go object with pointers for
// the garbage collector to scan.
type labelSets struct {
	chunks []offHeapChunk[byte] // arenas of labelChunkSize bytes (larger for a larger set)
	used   int                  // bytes used in the last chunk
	off    []uint64             // per id: chunk<<32 | offset in the chunk
	size   []uint32
	refs   []uint32 // rows using the set; 0 means the id is free
	hash   []uint64
	free   []uint32

	// index maps a set's hash to its id. A set whose hash is already taken
	// by a different set goes to spill, keyed by its bytes: hashes are 64
	// bits, so spill is empty in practice, but equality is always decided
	// on the stored bytes.
	index map[uint64]uint32
	spill map[string]uint32
	seed  maphash.Seed

	live      int // sets in use
	peak      int // most sets in use since the index was last rebuilt
	liveBytes int
	deadBytes int // bytes of freed sets still in the chunks
}

// labelChunkSize is the arena chunk: large enough that chunk headers cost
// nothing per set, small enough that growing by one chunk is cheap.
const labelChunkSize = 1 << 20

func newLabelSets() *labelSets {
	return &labelSets{index: map[uint64]uint32{}, spill: map[string]uint32{}, seed: maphash.MakeSeed()}
}

// bytes returns the stored set; valid until the next compact.
func (l *labelSets) bytes(id uint32) []byte {
	o := l.off[id]
	c := l.chunks[o>>32].values
	start := uint32(o)
	return c[start : start+l.size[id] : start+l.size[id]]
}

// find returns the id of the set b, if stored, and b's hash.
func (l *labelSets) find(b []byte) (id uint32, h uint64, ok bool) {
	h = maphash.Bytes(l.seed, b)
	if id, ok = l.index[h]; ok && bytes.Equal(l.bytes(id), b) {
		return id, h, true
	}
	if len(l.spill) > 0 {
		id, ok = l.spill[string(b)]
		return id, h, ok
	}
	return 0, h, false
}

// add stores b (not yet stored, hash h) with no references and returns its id.
func (l *labelSets) add(b []byte, h uint64) uint32 {
	var id uint32
	if n := len(l.free); n > 0 {
		id = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		id = uint32(len(l.off))
		l.off = append(l.off, 0)
		l.size = append(l.size, 0)
		l.refs = append(l.refs, 0)
		l.hash = append(l.hash, 0)
	}
	l.off[id] = l.store(b)
	l.size[id] = uint32(len(b))
	l.hash[id] = h
	if _, taken := l.index[h]; taken {
		l.spill[string(b)] = id
	} else {
		l.index[h] = id
	}
	l.live++
	l.peak = max(l.peak, l.live)
	l.liveBytes += len(b)
	return id
}

// store appends b to the last chunk, or to a new one, and returns its place.
func (l *labelSets) store(b []byte) uint64 {
	n := len(l.chunks)
	if n == 0 || l.used+len(b) > len(l.chunks[n-1].values) {
		l.chunks = append(l.chunks, newOffHeapChunk[byte](max(labelChunkSize, len(b))))
		l.used = 0
		n++
	}
	off := l.used
	l.used += copy(l.chunks[n-1].values[off:], b)
	return uint64(n-1)<<32 | uint64(off)
}

func (l *labelSets) ref(id uint32) { l.refs[id]++ }

// unref drops one reference; the last one frees the set.
func (l *labelSets) unref(id uint32) {
	l.refs[id]--
	if l.refs[id] > 0 {
		return
	}
	b := l.bytes(id)
	if cur, ok := l.index[l.hash[id]]; ok && cur == id {
		delete(l.index, l.hash[id])
	} else {
		delete(l.spill, string(b))
	}
	l.live--
	l.liveBytes -= len(b)
	l.deadBytes += len(b)
	l.free = append(l.free, id)
}

// compact gives memory back after a cardinality burst: when most stored
// bytes belong to freed sets, the live ones are copied into fresh chunks;
// when most of the index's peak is gone, the index is rebuilt (Go maps never
// shrink). Both are linear in what is live, and rare.
func (l *labelSets) compact() {
	if l.deadBytes > labelChunkSize && l.deadBytes > l.liveBytes {
		old := l.chunks
		l.chunks, l.used = nil, 0
		for id := range l.off {
			if l.refs[id] == 0 {
				continue
			}
			o := l.off[id]
			start := uint32(o)
			l.off[id] = l.store(old[o>>32].values[start : start+l.size[id]])
		}
		for i := range old {
			old[i].free()
		}
		l.deadBytes = 0
	}
	if l.peak > 4096 && l.live < l.peak/4 {
		index := make(map[uint64]uint32, l.live)
		for h, id := range l.index {
			index[h] = id
		}
		l.index = index
		l.peak = l.live
		if len(l.free) > 0 && l.live == 0 {
			// Nothing is live: drop the per-id slices too.
			l.off, l.size, l.refs, l.hash, l.free = nil, nil, nil, nil, nil
		}
	}
}

// release gives the chunks back; the sets must not be used afterwards.
func (l *labelSets) release() {
	for i := range l.chunks {
		l.chunks[i].free()
	}
	l.chunks = nil
}
