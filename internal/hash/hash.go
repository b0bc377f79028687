// Package hash holds the hashing and the integer hash index shared by our components.
//
// Keys are hashed as bytes with the runtime's AES-based hash through hash/maphash (the fastest
// hash available to Go code for short keys, no allocation), seeded once per process: hashes
// are never persisted or sent anywhere. The Index
// maps those 64-bit hashes to uint32 ids in flat slices — no pointers for the GC to scan, no
// string keys. It does not decide equality: several ids may share a hash, and callers compare
// the canonical key bytes they keep for each id (collisions are handled exactly).
package hash // import "github.com/otelcol-red/otelcol-red/internal/hash"

import "hash/maphash"

var seed = maphash.MakeSeed()

// Sum64 returns the hash of b, stable for the life of the process.
func Sum64(b []byte) uint64 { return maphash.Bytes(seed, b) }

// Index is an open-addressing hash table (linear probing, backward-shift deletion) from
// 64-bit hashes to uint32 ids. The zero value is empty and ready to use.
type Index struct {
	slots []slot
	mask  uint64
	n     int
}

type slot struct {
	hash uint64
	id1  uint32 // id+1; 0 marks an empty slot
}

// Probe starts a lookup of h. Call Next on the result until it returns false.
func (x *Index) Probe(h uint64) Probe {
	if len(x.slots) == 0 {
		return Probe{done: true}
	}
	return Probe{x: x, h: h, i: h & x.mask}
}

// Probe iterates over the ids stored under one hash.
type Probe struct {
	x    *Index
	h    uint64
	i    uint64
	done bool
}

// Next returns the next id stored under the probed hash.
func (p *Probe) Next() (uint32, bool) {
	if p.done {
		return 0, false
	}
	for {
		s := &p.x.slots[p.i]
		if s.id1 == 0 {
			p.done = true
			return 0, false
		}
		p.i = (p.i + 1) & p.x.mask
		if s.hash == p.h {
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
	return x.slots[h&x.mask].id1
}

// Insert adds id under h. It does not check for an existing entry.
func (x *Index) Insert(h uint64, id uint32) {
	if (x.n+1)*4 > len(x.slots)*3 || len(x.slots) == 0 {
		x.grow()
	}
	x.insert(h, id+1)
	x.n++
}

func (x *Index) insert(h uint64, id1 uint32) {
	i := h & x.mask
	for x.slots[i].id1 != 0 {
		i = (i + 1) & x.mask
	}
	x.slots[i] = slot{hash: h, id1: id1}
}

func (x *Index) grow() {
	old := x.slots
	n := len(old) * 2
	if n < 16 {
		n = 16
	}
	x.slots = make([]slot, n)
	x.mask = uint64(n - 1)
	for _, s := range old {
		if s.id1 != 0 {
			x.insert(s.hash, s.id1)
		}
	}
}

// Delete removes the entry (h, id); it reports whether it was found.
func (x *Index) Delete(h uint64, id uint32) bool {
	if len(x.slots) == 0 {
		return false
	}
	i := h & x.mask
	for {
		s := x.slots[i]
		if s.id1 == 0 {
			return false
		}
		if s.hash == h && s.id1 == id+1 {
			break
		}
		i = (i + 1) & x.mask
	}
	// Backward-shift deletion keeps probe sequences intact without tombstones.
	j := i
	for {
		j = (j + 1) & x.mask
		s := x.slots[j]
		if s.id1 == 0 {
			break
		}
		home := s.hash & x.mask
		// Move s into the hole at i unless its home lies cyclically in (i, j].
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			x.slots[i] = s
			i = j
		}
	}
	x.slots[i] = slot{}
	x.n--
	return true
}
