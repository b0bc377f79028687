// Package topk finds the heaviest keys of a weighted stream in fixed memory, with the
// Space-Saving algorithm (A. Metwally, D. Agrawal, A. El Abbadi, "Efficient computation of
// frequent and top-k elements in data streams", 2005).
//
// A sketch of k entries counts the keys it holds; a key it does not hold replaces the entry
// of least count and inherits that count as its possible error. So every key whose weight
// exceeds (total weight)/k is held, each count is an upper bound of its key's weight, and
// count − error a lower bound. Keys are 64-bit hashes the caller already has; the sketch
// hashes nothing and never allocates after New.
package topk // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/topk"

import "slices"

// Entry is a key held by a sketch.
type Entry struct {
	Key   uint64
	Count uint64 // at least the key's weight since it entered
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
	mask    uint64
}

// New returns an empty sketch of k entries (at least 1).
func New(k int) *Sketch {
	k = max(k, 1)
	n := 2
	for n < 2*k {
		n <<= 1
	}
	return &Sketch{
		entries: make([]Entry, 0, k),
		heap:    make([]int32, 0, k),
		pos:     make([]int32, k),
		index:   make([]int32, n),
		mask:    uint64(n - 1),
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

func (s *Sketch) find(key uint64) (int32, bool) {
	for i := key & s.mask; ; i = (i + 1) & s.mask {
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
	i := key & s.mask
	for s.index[i] != 0 {
		i = (i + 1) & s.mask
	}
	s.index[i] = slot + 1
}

// delete removes key from the index with backward-shift deletion: the entries after it in
// its probe run move back, so lookups never need tombstones.
func (s *Sketch) delete(key uint64) {
	i := key & s.mask
	for s.entries[s.index[i]-1].Key != key {
		i = (i + 1) & s.mask
	}
	for j := (i + 1) & s.mask; s.index[j] != 0; j = (j + 1) & s.mask {
		home := s.entries[s.index[j]-1].Key & s.mask
		// The entry at j may move to the hole at i unless its home lies cyclically in (i, j].
		if (j-home)&s.mask >= (j-i)&s.mask {
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
