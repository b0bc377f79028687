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
// it is never written after that.
type snapshot struct {
	known  []knownEntry  // power of two; a nil tmpl is an empty slot
	merged []mergedEntry // power of two, or nil when no position is merged
}

type knownEntry struct {
	hash uint64
	name string
	tmpl *template // for lastSeen only
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
			s.known[i] = knownEntry{hash: h, name: n.tmpl.name, tmpl: n.tmpl}
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
		if e := &s.known[i]; e.hash == h && e.name == name {
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
