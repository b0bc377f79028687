// Package hash holds the hashing and the integer hash index shared by our components.
//
// Keys are hashed as bytes with the runtime's AES-based hash through hash/maphash (the fastest
// hash available to Go code for short keys, no allocation), seeded once per process: hashes
// are never persisted or sent anywhere. The Index maps those 64-bit hashes to uint32 ids in one
// flat slice — no pointers for the GC to scan, no string keys. It does not decide equality:
// several ids may share a hash, and callers compare the canonical key bytes they keep for
// each id (collisions are handled exactly).
package hash // import "github.com/otelcol-red/otelcol-red/internal/hash"

import (
	"hash/maphash"
	"math/bits"
)

var seed = maphash.MakeSeed()

// Sum64 returns the hash of b, stable for the life of the process.
func Sum64(b []byte) uint64 { return maphash.Bytes(seed, b) }

// Index is an open-addressing hash table (linear probing, backward-shift deletion) from
// 64-bit hashes to uint32 ids, in one flat slice of 8-byte slots: the hash's top 32 bits (its
// tag, whose low bits name the home slot) and the id. It is at most 3/4 full, and Fit rebuilds
// a table a burst left under 1/8 full at 1/4 to 1/2: 11 to 21 bytes per id, where a Go map of the same
// entries takes 40 to 64 and never shrinks. The zero value is empty and ready to use.
//
// A lookup compares tags only, so ids whose hashes share their top 32 bits come out of one
// Probe together; the caller's comparison of its own key decides, as for equal hashes.
type Index struct {
	slots []slot // a power of two long, or nil
	n     int
}

type slot struct {
	tag uint32 // the top 32 bits of the hash
	id1 uint32 // id+1; 0 marks an empty slot
}

// minSlots is the smallest table: below it, shrinking saves nothing.
const minSlots = 16

func tagOf(h uint64) uint32 { return uint32(h >> 32) }

// Len returns the number of entries.
func (x *Index) Len() int { return x.n }

// Bytes returns the memory its slots take.
func (x *Index) Bytes() int { return 8 * len(x.slots) }

// Probe starts a lookup of h. Call Next on the result until it returns false.
func (x *Index) Probe(h uint64) Probe {
	if x.n == 0 {
		return Probe{done: true}
	}
	tag := tagOf(h)
	return Probe{x: x, tag: tag, i: int(tag) & (len(x.slots) - 1)}
}

// Probe iterates over the ids stored under one hash.
type Probe struct {
	x    *Index
	tag  uint32
	i    int
	done bool
}

// Next returns the next id stored under the probed hash.
func (p *Probe) Next() (uint32, bool) {
	if p.done {
		return 0, false
	}
	mask := len(p.x.slots) - 1
	for {
		s := p.x.slots[p.i]
		if s.id1 == 0 {
			p.done = true
			return 0, false
		}
		p.i = (p.i + 1) & mask
		if s.tag == p.tag {
			return s.id1 - 1, true
		}
	}
}

// First returns the id+1 in the slot where a lookup of h starts (0 when the slot is empty),
// without probing further. It exists for read-ahead passes: the slot is the lookup's one
// unavoidable cache miss, and a loop of First calls over many hashes lets the CPU take those
// misses in parallel.
func (x *Index) First(h uint64) uint32 {
	if len(x.slots) == 0 {
		return 0
	}
	return x.slots[int(tagOf(h))&(len(x.slots)-1)].id1
}

// Insert adds id under h. It does not check for an existing entry.
func (x *Index) Insert(h uint64, id uint32) {
	if 4*(x.n+1) > 3*len(x.slots) {
		x.resize(max(minSlots, 2*len(x.slots)))
	}
	x.place(slot{tag: tagOf(h), id1: id + 1})
	x.n++
}

func (x *Index) place(s slot) {
	mask := len(x.slots) - 1
	i := int(s.tag) & mask
	for x.slots[i].id1 != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = s
}

func (x *Index) resize(size int) {
	old := x.slots
	x.slots = make([]slot, size)
	for _, s := range old {
		if s.id1 != 0 {
			x.place(s)
		}
	}
}

// Delete removes the entry (h, id); it reports whether it was found.
func (x *Index) Delete(h uint64, id uint32) bool {
	if x.n == 0 {
		return false
	}
	want := slot{tag: tagOf(h), id1: id + 1}
	mask := len(x.slots) - 1
	i := int(want.tag) & mask
	for x.slots[i] != want {
		if x.slots[i].id1 == 0 {
			return false
		}
		i = (i + 1) & mask
	}
	// Backward-shift deletion keeps probe sequences intact without tombstones: the slot at j
	// moves into the hole at i when its home is cyclically outside (i, j], so that the hole
	// lies on its probe path.
	for j := (i + 1) & mask; x.slots[j].id1 != 0; j = (j + 1) & mask {
		home := int(x.slots[j].tag) & mask
		if (j-home)&mask >= (j-i)&mask {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = slot{}
	x.n--
	return true
}

// Fit gives memory back after a burst: a table under 1/8 full is rebuilt at twice its
// entries, rounded up to a power of two. It is linear in the table; call it where the caller
// compacts, not per entry.
func (x *Index) Fit() {
	if len(x.slots) > minSlots && 8*x.n < len(x.slots) {
		x.resize(max(minSlots, 1<<bits.Len(uint(2*x.n))))
	}
}

// Reset empties the index and releases its slots.
func (x *Index) Reset() { x.slots, x.n = nil, 0 }
