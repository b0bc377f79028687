// Package clustering learns span-name templates from the names each service sends, so that
// names carrying IDs or other unbounded words become a few series: words that look like
// identifiers become {id} at once (tokens.go), and a position of a name that shows more than
// max_children distinct words becomes {*} (tree.go).
//
// It is split between many producers, which only read, and one learner, which alone writes:
// producers rewrite names with the latest snapshot the learner published (snapshot.go) and
// collect the names it does not know yet in their Scratch; the learner takes those, updates
// its trees and publishes new snapshots through atomic pointers. Nothing takes a lock.
package clustering // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/clustering"

import (
	"hash/maphash"
	"sync/atomic"
	"time"
	"unsafe"
)

// Bounds that are not configured.
const (
	// MaxServices is the number of services with templates; names of further services get
	// the ID heuristics only, until services expire.
	MaxServices = 1000
	// MaxTemplates bounds the templates of all services together (150 to 220 bytes each with
	// their tree and snapshot slots, 2 to 4 of 16 bytes: ~22 MiB): when it is reached, a service makes room
	// among its own templates, and a service without templates gets none.
	MaxTemplates = 100_000
	// MaxNameLen and maxEdges bound the names learned: longer ones get the ID heuristics and
	// the merged positions the snapshot has, but are not learned.
	MaxNameLen = 256
	maxEdges   = 32
	// LearnPerBatch bounds the unknown names a Scratch hands to the learner at a time:
	// whatever the churn, learning costs the learner at most this many names per batch, and
	// a position reaches max_children within a few batches.
	LearnPerBatch = 16
)

// Config is the clustering's part of the configuration (validated by the caller).
type Config struct {
	MaxChildren            int           // distinct words a position keeps before it is merged
	MaxTemplatesPerService int           // templates per service; the least recently learned and unseen go first
	TemplateExpiration     time.Duration // a template unseen this long is forgotten; 0: never
}

// Clusterer is shared by the producers (Template) and the learner (Learn, Publish, Expire,
// called from one goroutine).
type Clusterer struct {
	seed     maphash.Seed
	services atomic.Pointer[map[string]*slot] // published by the learner
	now      atomic.Int64                     // unix seconds, as the learner last saw the clock
	held     atomic.Int64                     // templates, published with the snapshots
	l        *learner
}

// New returns a Clusterer that knows nothing yet.
func New(c Config) *Clusterer {
	cl := &Clusterer{seed: maphash.MakeSeed(), l: newLearner(c)}
	cl.services.Store(&map[string]*slot{})
	return cl
}

// Scratch is one producer's room (one per batch): the name being built, the service last
// looked up, and the unknown names for the learner. After warm-up it allocates nothing.
type Scratch struct {
	out      []byte
	svc      string
	services *map[string]*slot // the map svc was looked up in
	slot     *slot
	learnBuf []byte // service and name bytes of learn
	learn    []pending
}

type pending struct {
	hash             uint64 // of the name
	svcOff, svcLen   uint32
	nameOff, nameLen uint32
}

// Footprint is the bytes s holds.
func (s *Scratch) Footprint() int64 {
	return int64(cap(s.out)+cap(s.learnBuf)) + int64(cap(s.learn))*int64(unsafe.Sizeof(pending{}))
}

// Pending is how many names s holds for Learn.
func (s *Scratch) Pending() int { return len(s.learn) }

// Template returns the template of name for service svc and whether it differs from name.
// The result may point into s and is valid until the next call with s. Names the learner
// does not know are added to s for Learn (at most LearnPerBatch). No allocation once s has
// grown.
func (c *Clusterer) Template(s *Scratch, svc, name string) (string, bool) {
	snap := c.snapshotOf(s, svc)
	merged := snap != nil && snap.merged != nil
	// s.out is the template up to name[copied:]: the name is copied in pieces, between the
	// words replaced, not word by word (each piece is a memmove call).
	s.out = s.out[:0]
	copied, edges := 0, 0
	for i := 0; i < len(name); edges++ {
		// nextEdge, with a note of whether the word has a decimal digit: every ID does, so
		// most words are never looked at again.
		w := i
		for w < len(name) && classes[name[w]]&classSep != 0 {
			w++
		}
		end, cls := w, byte(0)
		for end < len(name) {
			k := classes[name[end]]
			if k&classSep != 0 {
				break
			}
			cls |= k
			end++
		}
		digit := cls&classDigit != 0
		start := i
		i = end
		if w == end {
			continue
		}
		if merged && edges > 0 {
			s.out = append(s.out, name[copied:start]...)
			copied = start
			if snap.isMerged(c.seed, s.out) {
				s.out = append(append(s.out, name[start:w]...), Wildcard...)
				copied = end
				continue
			}
		}
		if digit && isID(name[w:end]) {
			s.out = append(append(s.out, name[copied:w]...), ID...)
			copied = end
		}
	}
	out := name
	if copied > 0 {
		s.out = append(s.out, name[copied:]...)
		out = bytesString(s.out)
	}
	if len(out) <= MaxNameLen && edges <= maxEdges {
		h := maphash.String(c.seed, out)
		if i := snapLookup(snap, h); i >= 0 {
			snap.stamp(i, c.now.Load())
		} else {
			s.addLearn(svc, out, h)
		}
	}
	return out, copied > 0 && out != name
}

func snapLookup(snap *snapshot, h uint64) int {
	if snap == nil {
		return -1
	}
	return snap.lookup(h)
}

// snapshotOf returns svc's snapshot, nil when the learner has none. The slot found is kept
// in s while the services map stays the same.
func (c *Clusterer) snapshotOf(s *Scratch, svc string) *snapshot {
	m := c.services.Load()
	if m != s.services || svc != s.svc {
		s.services, s.svc, s.slot = m, svc, (*m)[svc]
	}
	if s.slot == nil {
		return nil
	}
	return s.slot.snap.Load()
}

func (s *Scratch) addLearn(svc, name string, h uint64) {
	if len(s.learn) >= LearnPerBatch {
		return
	}
	for _, p := range s.learn {
		if p.hash == h && bytesString(s.learnBuf[p.svcOff:p.svcOff+p.svcLen]) == svc {
			return
		}
	}
	p := pending{hash: h, svcOff: uint32(len(s.learnBuf)), svcLen: uint32(len(svc))}
	s.learnBuf = append(s.learnBuf, svc...)
	p.nameOff, p.nameLen = uint32(len(s.learnBuf)), uint32(len(name))
	s.learnBuf = append(s.learnBuf, name...)
	s.learn = append(s.learn, p)
}

// Learn takes the names s collected and resets it. Learner goroutine only; now is the clock
// (unix nanoseconds), which producers then stamp on the templates they see.
func (c *Clusterer) Learn(s *Scratch, now int64) {
	sec := now / int64(time.Second)
	if c.now.Load() != sec {
		c.now.Store(sec)
	}
	for _, p := range s.learn {
		c.l.learn(s.learnBuf[p.svcOff:p.svcOff+p.svcLen], s.learnBuf[p.nameOff:p.nameOff+p.nameLen], sec)
	}
	s.learn, s.learnBuf = s.learn[:0], s.learnBuf[:0]
}

// Publish gives the producers new snapshots of the services whose trees changed since the
// last call. Learner goroutine only; without changes it costs nothing.
func (c *Clusterer) Publish() {
	l := c.l
	for _, sv := range l.dirty {
		sv.dirty = false
		sv.slot.snap.Store(newSnapshot(l, c.seed, sv))
	}
	clear(l.dirty)
	l.dirty = l.dirty[:0]
	if l.servicesDiff {
		l.servicesDiff = false
		m := make(map[string]*slot, len(l.services))
		for name, sv := range l.services {
			m[name] = sv.slot
		}
		c.services.Store(&m)
	}
	c.held.Store(int64(l.held))
	l.compactEdges()
}

// Expire forgets the templates unseen for the configured expiration, and publishes.
// Learner goroutine only; now is unix nanoseconds.
func (c *Clusterer) Expire(now int64) {
	sec := now / int64(time.Second)
	c.now.Store(sec)
	c.l.expire(sec)
	c.Publish()
}

// Templates returns the templates held at the last Publish.
func (c *Clusterer) Templates() int64 { return c.held.Load() }

// bytesString views b as a string without copying; b must not change while it is used.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
