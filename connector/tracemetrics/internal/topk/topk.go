// Package topk finds the heaviest keys of a weighted stream in fixed memory, with the
// Space-Saving algorithm (A. Metwally, D. Agrawal, A. El Abbadi, "Efficient computation of
// frequent and top-k elements in data streams", 2005).
//
// A sketch of k entries counts the keys it holds exactly. A key it does not hold, once all
// entries are taken, replaces the entry of least count m and inherits m as its possible
// error; not always, as in Space-Saving, but with probability w/(m+w) for a weight w: the
// randomized admission policy of R. Ben Basat, G. Einziger, R. Friedman, Y. Kassner
// ("Randomized admission policy for efficient top-k and frequency estimation", 2017).
// In a stream where most keys are seen once (IDs), Space-Saving replaces an entry at every
// one of them, and the keys worth holding are pushed out by the churn; with the admission
// test most of them cost one lookup and are turned away, and a key that keeps coming is
// admitted early. count − error stays a lower bound of the weight of a key held (what it
// received since it was admitted); count itself is an estimate (unlike Space-Saving's, not an
// upper bound: weight turned away is not counted), and the least count is at most
// (total weight)/k.
// Keys are 64-bit hashes the caller already has; the sketch hashes nothing, draws its random
// numbers from its own deterministic generator, and never allocates after New.
package topk // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/topk"

import (
	"math/bits"
	"slices"
)

// Entry is a key held by a sketch.
type Entry struct {
	Key   uint64
	Count uint64 // the key's estimated weight
	Err   uint64 // at most this much of Count belongs to the keys it replaced
	Tag   uint32 // the caller's, from the key's latest Add
}

// Guaranteed returns the weight the key certainly had: Count − Err.
func (e *Entry) Guaranteed() uint64 { return e.Count - e.Err }

// Sketch is a Space-Saving sketch. The zero value is unusable: use New.
type Sketch struct {
	entries []Entry // by slot; a slot keeps its place while its key changes
	heap    []int32 // slots, a min-heap by Count: the entry a new key replaces is heap[0]
	pos     []int32 // by slot: its place in heap
	index   []int32 // open addressing by key: slot+1, 0 when empty; at most half full
	shift   uint8   // a key's home in index: (key × Fibonacci constant) >> shift
	rnd     uint64  // xorshift state of the admission test
}

// New returns an empty sketch of k entries (at least 1).
func New(k int) *Sketch {
	k = max(k, 1)
	lg := 1
	for 1<<lg < 2*k {
		lg++
	}
	return &Sketch{
		entries: make([]Entry, 0, k),
		heap:    make([]int32, 0, k),
		pos:     make([]int32, k),
		index:   make([]int32, 1<<lg),
		shift:   uint8(64 - lg),
		rnd:     0x9e3779b97f4a7c15,
	}
}

// Len returns the number of keys held.
func (s *Sketch) Len() int { return len(s.entries) }

// Reset empties the sketch, keeping its memory.
func (s *Sketch) Reset() {
	s.entries = s.entries[:0]
	s.heap = s.heap[:0]
	clear(s.index)
}

// Add adds weight w to key and sets its tag.
func (s *Sketch) Add(key, w uint64, tag uint32) {
	if slot, ok := s.find(key); ok {
		e := &s.entries[slot]
		e.Count += w
		e.Tag = tag
		s.down(int(s.pos[slot]))
		return
	}
	if len(s.entries) < cap(s.entries) {
		slot := int32(len(s.entries))
		s.entries = append(s.entries, Entry{Key: key, Count: w, Tag: tag})
		s.pos[slot] = int32(len(s.heap))
		s.heap = append(s.heap, slot)
		s.insert(key, slot)
		s.up(len(s.heap) - 1)
		return
	}
	slot := s.heap[0]
	e := &s.entries[slot]
	if !s.admit(e.Count, w) {
		return
	}
	s.delete(e.Key)
	*e = Entry{Key: key, Count: e.Count + w, Err: e.Count, Tag: tag}
	s.insert(key, slot)
	s.down(0)
}

// Top appends to dst the entries whose guaranteed weight is at least atLeast, heaviest
// (by guaranteed weight) first, and returns it.
func (s *Sketch) Top(dst []Entry, atLeast uint64) []Entry {
	n := len(dst)
	for i := range s.entries {
		if s.entries[i].Guaranteed() >= atLeast {
			dst = append(dst, s.entries[i])
		}
	}
	slices.SortFunc(dst[n:], func(a, b Entry) int {
		ga, gb := a.Guaranteed(), b.Guaranteed()
		switch {
		case ga != gb:
			if ga > gb {
				return -1
			}
			return 1
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	return dst
}

// admit draws the admission test of a key of weight w against an entry of count m: true with
// probability w/(m+w).
func (s *Sketch) admit(m, w uint64) bool {
	s.rnd ^= s.rnd << 13
	s.rnd ^= s.rnd >> 7
	s.rnd ^= s.rnd << 17
	hi, _ := bits.Mul64(s.rnd, m+w) // uniform in [0, m+w)
	return hi < w
}

func (s *Sketch) home(key uint64) uint64 { return (key * 0x9e3779b97f4a7c15) >> s.shift }

func (s *Sketch) mask() uint64 { return uint64(len(s.index) - 1) }

func (s *Sketch) find(key uint64) (int32, bool) {
	mask := s.mask()
	for i := s.home(key); ; i = (i + 1) & mask {
		v := s.index[i]
		if v == 0 {
			return 0, false
		}
		if s.entries[v-1].Key == key {
			return v - 1, true
		}
	}
}

func (s *Sketch) insert(key uint64, slot int32) {
	mask := s.mask()
	i := s.home(key)
	for s.index[i] != 0 {
		i = (i + 1) & mask
	}
	s.index[i] = slot + 1
}

// delete removes key from the index with backward-shift deletion: the entries after it in
// its probe run move back, so lookups never need tombstones.
func (s *Sketch) delete(key uint64) {
	mask := s.mask()
	i := s.home(key)
	for s.entries[s.index[i]-1].Key != key {
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; s.index[j] != 0; j = (j + 1) & mask {
		home := s.home(s.entries[s.index[j]-1].Key)
		// The entry at j may move to the hole at i unless its home lies cyclically in (i, j].
		if (j-home)&mask >= (j-i)&mask {
			s.index[i] = s.index[j]
			i = j
		}
	}
	s.index[i] = 0
}

func (s *Sketch) less(a, b int) bool {
	return s.entries[s.heap[a]].Count < s.entries[s.heap[b]].Count
}

func (s *Sketch) swap(a, b int) {
	s.heap[a], s.heap[b] = s.heap[b], s.heap[a]
	s.pos[s.heap[a]] = int32(a)
	s.pos[s.heap[b]] = int32(b)
}

func (s *Sketch) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			return
		}
		s.swap(i, p)
		i = p
	}
}

func (s *Sketch) down(i int) {
	n := len(s.heap)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && s.less(c+1, c) {
			c++
		}
		if !s.less(c, i) {
			return
		}
		s.swap(i, c)
		i = c
	}
}
