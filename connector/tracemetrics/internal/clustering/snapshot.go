package clustering // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/clustering"

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"
)

// snapshot is what producers read of one service's tree: the templates it holds and the
// merged positions, each in an open-addressing table of immutable entries, found by hash
// and compared exactly (a collision never gives a name another's template). The learner
// builds a new one whenever the service's tree changed and stores it in the service's slot;
// after that only the entries' seen stamps (atomics) are written.
type snapshot struct {
	known  []knownEntry  // power of two; a nil tmpl is an empty slot
	merged []mergedEntry // power of two, or nil when no position is merged
}

// knownEntry is one cache line (64 bytes), so that a producer's look-up of a known name,
// stamp included, usually reads one line of memory: the name is compared in inline when it
// fits (most names, and every template of an ID or a wildcard it holds, are short), and
// seen mirrors tmpl.lastSeen, which is stamped through it once per second at most. With
// tens of thousands of templates the tables do not stay cached, and reading the name and the
// template from their own heap objects cost two more misses a span (~60 ns, BenchmarkLayers).
type knownEntry struct {
	hash   uint64
	seen   atomic.Int64 // tmpl.lastSeen as this snapshot last stamped or read it
	tmpl   *template    // for lastSeen only
	name   string
	n      uint8 // len(name) when it is in inline, else inlineName+1
	inline [inlineName]byte
}

// inlineName is the longest name a knownEntry holds in itself: what is left of 64 bytes.
const inlineName = 23

// is reports whether e is the entry of name, whose hash is h.
func (e *knownEntry) is(h uint64, name string) bool {
	if e.hash != h {
		return false
	}
	if len(name) <= inlineName {
		return int(e.n) == len(name) && string(e.inline[:len(name)]) == name
	}
	return e.name == name
}

// stamp records that the template was seen at now (unix seconds): once per second at most
// does it write the template itself.
func (e *knownEntry) stamp(now int64) {
	if e.seen.Load() != now {
		e.seen.Store(now)
		e.tmpl.lastSeen.Store(now)
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

// buildSnapshot copies sv's tree into a new snapshot.
func (l *learner) buildSnapshot(seed maphash.Seed, sv *service) *snapshot {
	s := &snapshot{known: make([]knownEntry, tableSize(sv.count))}
	var merged []*node
	var walk func(n *node)
	walk = func(n *node) {
		if n.tmpl != nil {
			h := maphash.String(seed, n.tmpl.name)
			i := h & uint64(len(s.known)-1)
			for s.known[i].tmpl != nil {
				i = (i + 1) & uint64(len(s.known)-1)
			}
			e := &s.known[i]
			e.hash, e.name, e.tmpl = h, n.tmpl.name, n.tmpl
			e.seen.Store(n.tmpl.lastSeen.Load())
			e.n = inlineName + 1
			if len(e.name) <= inlineName {
				e.n = uint8(copy(e.inline[:], e.name))
			}
		}
		if n.merged {
			merged = append(merged, n)
		}
		for _, c := range n.children {
			walk(c)
		}
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

// lookup returns the template entry named name, or nil.
func (s *snapshot) lookup(h uint64, name string) *knownEntry {
	mask := uint64(len(s.known) - 1)
	for i := h & mask; s.known[i].tmpl != nil; i = (i + 1) & mask {
		if e := &s.known[i]; e.is(h, name) {
			return e
		}
	}
	return nil
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
