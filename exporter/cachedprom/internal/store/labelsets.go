package store // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"

import "github.com/otelcol-red/otelcol-red/internal/hash"

// labelSets interns rendered label sets (`a="x",b="y"`, sorted, escaped).
// Each distinct set is stored once and shared by every family that uses it:
// the calls counter and the duration histogram of one RED series share
// theirs. A set is stored as the ids of its pairs (`a="x"`), each pair once:
// the sets of a million RED series repeat a few thousand pairs (the
// service, the span kind and status, the scope and the job), so a set takes
// four bytes a pair where its text took ~240 bytes. The renderer copies the
// pairs' bytes in order (appendTo).
type labelSets struct {
	pairs sequenceIDs[byte]   // `name="value"`, escaped as rendered
	sets  sequenceIDs[uint32] // pair ids, in label order
	ids   []uint32            // scratch: the pair ids of the set being found

	// byIdent caches the set of an OTLP identity (its scope, resource and
	// attributes, not its metric's name: the calls counter and the duration
	// histogram of a RED series find their one set with one entry), so a
	// point of a known series skips rendering its labels. A set remembers
	// one identity, the last that rendered to it: a set written by several
	// OTLP series (merged series, labels equal after sanitizing) serves the
	// others through the rendering path, which is always right. The entry
	// goes with its set.
	byIdent hash.Index
	ident   []identKey // per set id: the cached identity; zero when none
}

// identKey is a 128-bit hash of an OTLP identity less its metric's name
// and type: at 2^21 series the chance that two collide is below 2^-85.
type identKey [2]uint64

// Arena chunks: large enough that chunk headers cost nothing per value,
// small enough that growing by one chunk is cheap.
const (
	labelPairChunk = 1 << 20 // bytes
	labelSetChunk  = 1 << 18 // pair ids
)

func newLabelSets() *labelSets {
	return &labelSets{pairs: newSequenceIDs[byte](labelPairChunk), sets: newSequenceIDs[uint32](labelSetChunk)}
}

// live is the number of sets in use, the unit of max_series.
func (l *labelSets) live() int { return l.sets.live }

// refs returns the number of rows using set id.
func (l *labelSets) refs(id uint32) uint32 { return l.sets.refs[id] }

// appendTo appends the bytes of set id.
func (l *labelSets) appendTo(dst []byte, id uint32) []byte {
	for i, p := range l.sets.values(id) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, l.pairs.values(p)...)
	}
	return dst
}

// pairAt returns pair i of the set b rendered by appendLabels, whose pairs
// end at ends (the ',' between two pairs belongs to neither).
func pairAt(b []byte, ends []int, i int) []byte {
	start := 0
	if i > 0 {
		start = ends[i-1] + 1
	}
	return b[start:ends[i]]
}

// find returns the id of the set b, rendered with pair ends ends, if stored.
func (l *labelSets) find(b []byte, ends []int) (uint32, bool) {
	ids := l.ids[:0]
	for i := range ends {
		p, _, ok := l.pairs.find(pairAt(b, ends, i))
		if !ok {
			return 0, false // a new pair: a new set
		}
		ids = append(ids, p)
	}
	l.ids = ids
	id, _, ok := l.sets.find(ids)
	return id, ok
}

// add stores the set b, rendered with pair ends ends, not yet stored, with
// no references, and returns its id.
func (l *labelSets) add(b []byte, ends []int) uint32 {
	ids := l.ids[:0]
	for i := range ends {
		pb := pairAt(b, ends, i)
		p, h, ok := l.pairs.find(pb)
		if !ok {
			p, _ = l.pairs.add(pb, h)
		}
		l.pairs.ref(p)
		ids = append(ids, p)
	}
	l.ids = ids
	id, fresh := l.sets.add(ids, l.sets.hashOf(ids))
	if fresh {
		l.ident = append(l.ident, identKey{})
	}
	return id
}

// cached returns the set last found for OTLP identity ik.
func (l *labelSets) cached(ik identKey) (uint32, bool) {
	p := l.byIdent.Probe(ik[0])
	for id, ok := p.Next(); ok; id, ok = p.Next() {
		if l.ident[id] == ik {
			return id, true
		}
	}
	return 0, false
}

// remember makes ik find set id, in place of the identity it remembered.
func (l *labelSets) remember(id uint32, ik identKey) {
	if l.ident[id] == ik {
		return
	}
	l.forget(id)
	l.ident[id] = ik
	l.byIdent.Insert(ik[0], id)
}

// forget drops the identity set id remembers.
func (l *labelSets) forget(id uint32) {
	if l.ident[id] != (identKey{}) {
		l.byIdent.Delete(l.ident[id][0], id)
		l.ident[id] = identKey{}
	}
}

func (l *labelSets) ref(id uint32) { l.sets.ref(id) }

// unref drops one reference; the last one frees the set and its hold on
// its pairs.
func (l *labelSets) unref(id uint32) {
	if !l.sets.unref(id) {
		return
	}
	for _, p := range l.sets.values(id) {
		l.pairs.unref(p)
	}
	l.forget(id)
}

// compact gives memory back after a cardinality burst (see sequenceIDs.compact).
func (l *labelSets) compact() {
	if l.sets.compact() {
		l.ident = nil
		l.byIdent.Reset()
	}
	l.byIdent.Fit()
	l.pairs.compact()
}

// mapped is what the pairs and the sets map outside the heap.
func (l *labelSets) mapped() int { return l.pairs.mappedBytes() + l.sets.mappedBytes() }

// release gives the chunks back; the sets must not be used afterwards.
func (l *labelSets) release() {
	l.sets.release()
	l.pairs.release()
}
