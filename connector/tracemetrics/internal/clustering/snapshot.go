package clustering // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/clustering"

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"
)

// snapshot is what producers read of one service's tree: the templates it holds and the
// merged positions, each in an open-addressing table, found by hash. The learner builds a new
// one whenever the service's tree changed and stores it in the service's slot; after that only
// the seen stamps (atomics) are written.
//
// A producer's look-up of a template only decides whether to stamp it or hand the name to the
// learner: the name a span gets is decided before it, by the scan of the name and the merged
// positions, which are compared exactly. So the templates' table holds their 64-bit hashes
// alone (a collision, one in 2^64 per pair under a per-process seed, would stamp a template
// for a name the learner then never sees), and their look-up reads 8 bytes a probe: 25,000
// templates take 400 KiB, which stays in the CPU's caches beside the reducer's own tables,
// where 64-byte entries holding the names (3.2 MiB) missed them at every new name of a
// request (BenchmarkLayers, README.md).
type snapshot struct {
	hashes []uint64        // power of two; knownHash of each template, 0 in an empty slot
	seen   []atomic.Uint32 // as hashes: the template's lastSeen as this snapshot last stamped it, truncated
	tmpls  []int32         // as hashes: the template, for lastSeen only
	merged []mergedEntry   // power of two, or nil when no position is merged

	lastSeen *seenStore // the learner's
}

// knownHash is what the templates' table stores of a name's hash: never 0, which marks an
// empty slot. The slot is picked by the hash itself.
func knownHash(h uint64) uint64 { return h | 1 }

// stamp records that template i was seen at now (unix seconds): once per second at most does
// it write the template itself.
func (s *snapshot) stamp(i int, now int64) {
	if s.seen[i].Load() != uint32(now) {
		s.seen[i].Store(uint32(now))
		s.lastSeen.at(s.tmpls[i]).Store(now)
	}
}

type mergedEntry struct {
	hash   uint64
	prefix string // the path of a merged node
	used   bool
}

// slot holds a service's latest snapshot. A slot lives as long as its service does in the
// learner, so a producer may keep a pointer to it (Scratch) while the services map is the same.
type slot struct{ snap atomic.Pointer[snapshot] }

// tableSize is a power of two at least twice n.
func tableSize(n int) int { return 1 << bits.Len(uint(2*n+1)) }

// newSnapshot copies sv's tree, held by learner l, into a new snapshot.
func newSnapshot(l *learner, seed maphash.Seed, sv *service) *snapshot {
	size := tableSize(sv.count)
	s := &snapshot{hashes: make([]uint64, size), seen: make([]atomic.Uint32, size), tmpls: make([]int32, size),
		lastSeen: l.lastSeen}
	var merged []int32
	// The walk keeps the path of the node it is at in l.path: a template's name.
	l.path = l.path[:0]
	var walk func(n int32)
	walk = func(n int32) {
		depth := len(l.path)
		l.path = append(l.path, l.edge(n)...)
		if t := l.nodes[n].tmpl; t != 0 {
			h := maphash.Bytes(seed, l.path)
			i := h & uint64(size-1)
			for s.hashes[i] != 0 {
				i = (i + 1) & uint64(size-1)
			}
			s.hashes[i], s.tmpls[i] = knownHash(h), t
			s.seen[i].Store(uint32(l.lastSeen.at(t).Load()))
		}
		if l.nodes[n].merged {
			merged = append(merged, n)
		}
		for c := l.nodes[n].first; c != 0; c = l.nodes[c].next {
			walk(c)
		}
		l.path = l.path[:depth]
	}
	walk(sv.root)
	if len(merged) > 0 {
		s.merged = make([]mergedEntry, tableSize(len(merged)))
		for _, n := range merged {
			prefix := string(l.pathOf(n))
			h := maphash.String(seed, prefix)
			i := h & uint64(len(s.merged)-1)
			for s.merged[i].used {
				i = (i + 1) & uint64(len(s.merged)-1)
			}
			s.merged[i] = mergedEntry{hash: h, prefix: prefix, used: true}
		}
	}
	return s
}

// lookup returns the slot of the template whose name hashes to h, or -1.
func (s *snapshot) lookup(h uint64) int {
	mask, want := uint64(len(s.hashes)-1), knownHash(h)
	for i := h & mask; s.hashes[i] != 0; i = (i + 1) & mask {
		if s.hashes[i] == want {
			return int(i)
		}
	}
	return -1
}

// isMerged reports whether the position after prefix is merged.
func (s *snapshot) isMerged(seed maphash.Seed, prefix []byte) bool {
	h := maphash.Bytes(seed, prefix)
	mask := uint64(len(s.merged) - 1)
	for i := h & mask; s.merged[i].used; i = (i + 1) & mask {
		if e := &s.merged[i]; e.hash == h && e.prefix == bytesString(prefix) {
			return true
		}
	}
	return false
}
