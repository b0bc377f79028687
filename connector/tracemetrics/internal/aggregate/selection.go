package aggregate // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/aggregate"

import (
	"slices"
	"sync/atomic"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/telemetry"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/topk"
)

// selector chooses, under cap_selection.by: traffic, which series max_series and
// max_series_per_service keep once full: the busiest rather than the first.
//
// It belongs to the aggregator and runs on its goroutine only, so it takes no lock and
// shares nothing with the producers or the flusher:
//
//   - while an interval fills, every span a cap refuses is counted, by its series' identity
//     hash, in a sketch of its scope (internal/topk: Space-Saving with a randomized admission
//     test): one per service at max_series_per_service, one per family at max_series,
//     allocated when the scope first refuses a series. The series that have a slot need no
//     sketch: the interval's delta rows count their spans exactly;
//   - at each swap (rerank), in each full scope, the refused series that certainly received
//     the most spans (the sketch's lower bound) are matched with the series of the scope
//     that received the fewest, heaviest against lightest; a refused series that received
//     more than twice as many spans (hysteresis: a pair of similar series never trades places
//     back and forth) and at least minPromote is promoted, the other demoted. The sketches then
//     start again from zero, so a ranking is that of one interval;
//   - a promoted series gets a reservation: the slot its demoted rival gave up is kept for it
//     (other new series still find the scope full) until its next span creates it, in the
//     interval after the one it was counted in. A reservation not taken by the next swap is
//     given back, and a series that took its reservation is spared at the next swap (fresh);
//   - a demoted series stays in the table, marked by demotedEpoch, out of the caps' counts: its
//     later spans go to the overflow series of its service, kind and status code (counted in
//     the sketch again, so it can come back), it gets no rows, and so it is no longer updated
//     and expires like an idle series. Its cumulative value stays where it was; nothing is
//     taken back from any series, so every total is exact at every flush.
type selector struct {
	size          int   // entries per sketch: cap_selection.sketch_size
	maxSeries     int   // max_series; 0: none
	maxService    int32 // max_series_per_service; 0: none
	demotedSeries *[series.OverflowKinds]atomic.Int64

	svc    [series.MaxFamilies][]*topk.Sketch // by service id; nil until the service is refused a series
	global [series.MaxFamilies]*topk.Sketch   // nil until the family is refused a series at max_series

	// Reservations of promoted series not yet created, by the series' identity hash.
	admitted    map[uint64]admission
	svcReserved [series.MaxFamilies][]int32 // by service id
	reserved    [series.MaxFamilies]int
	// Identity hashes of the promoted series that took their slot since the last re-ranking:
	// they are not demoted at the next one, where their count covers only part of the interval.
	fresh [series.MaxFamilies][]uint64

	// rerank's scratch, kept for the next swap.
	top        []topk.Entry
	scopes     []rankScope
	scopeOfSvc []int32 // by service id: index in scopes, -1 when the service has no candidate
	weak       []weakSeries
	skip       []uint64 // bitset by series id: the family's overflow series and fresh promotions
}

type admission struct {
	fam  uint8
	kind series.Overflow // the cap whose scope promoted the series
	svc  uint32
}

// rankScope is a full scope with candidates at a re-ranking: its candidates are top[lo:hi],
// its lightest series weak[wOff:wOff+wLen], a max-heap until matched, of capacity hi-lo.
type rankScope struct {
	svc        uint32 // the service; globalScope for max_series
	kind       series.Overflow
	lo, hi     int
	wOff, wLen int
}

const globalScope = ^uint32(0)

// weakSeries is a series of a full scope and its spans in the interval.
type weakSeries struct {
	count uint64
	id    uint32
}

// demotedEpoch marks a demoted series in seriesMeta.epoch: never the aggregator's epoch (it
// would take 2^32 flushes), so the series never has an active row.
const demotedEpoch = ^uint32(0)

// minPromote is the fewest spans a refused series must certainly have received in an
// interval to be promoted: a value seen once (an ID in a span name) never is, whatever the
// series it would replace.
const minPromote = 2

// promoteFactor is the hysteresis: a refused series takes a slot only from a series that
// received less than 1/promoteFactor of its spans.
const promoteFactor = 2

// newSelector returns the selector of p's caps, counting demotions in tel; nil by arrival or
// without caps.
func newSelector(p *series.Plan, tel *telemetry.Telemetry) *selector {
	if !p.ByTraffic || (p.MaxSeries == 0 && p.MaxService == 0) {
		return nil
	}
	return &selector{size: p.SketchSize, maxSeries: p.MaxSeries, maxService: p.MaxService,
		demotedSeries: &tel.DemotedSeries, admitted: map[uint64]admission{}}
}

// reservedFor returns the slots of scope (service svc of family f, or the family) kept for
// promoted series. A nil selector reserves nothing.
func (s *selector) reservedFor(f int, svc uint32) (service int32, global int) {
	if s == nil {
		return 0, 0
	}
	if int(svc) < len(s.svcReserved[f]) {
		service = s.svcReserved[f][svc]
	}
	return service, s.reserved[f]
}

// claim reports whether the series hashing to h, of service svc and family f, was promoted at
// the last re-ranking and not created since; if so, its reservation is given back for it to
// take, and the cap whose scope promoted it is returned.
func (s *selector) claim(f int, svc uint32, h uint64) (series.Overflow, bool) {
	if len(s.admitted) == 0 {
		return series.NoOverflow, false
	}
	ad, ok := s.admitted[h]
	if !ok || int(ad.fam) != f || ad.svc != svc {
		return series.NoOverflow, false
	}
	delete(s.admitted, h)
	s.svcReserved[f][svc]--
	s.reserved[f]--
	s.fresh[f] = append(s.fresh[f], h)
	return ad.kind, true
}

// count adds w spans of the series hashing to h, of service svc, to the sketch of the scope
// whose cap refused it.
func (s *selector) count(f int, svc uint32, h, w uint64, k series.Overflow) {
	var sk *topk.Sketch
	if k == series.GlobalOverflow {
		if sk = s.global[f]; sk == nil {
			sk = topk.New(s.size)
			s.global[f] = sk
		}
	} else {
		if int(svc) >= len(s.svc[f]) {
			s.svc[f] = append(s.svc[f], make([]*topk.Sketch, int(svc)+1-len(s.svc[f]))...)
		}
		if sk = s.svc[f][svc]; sk == nil {
			sk = topk.New(s.size)
			s.svc[f][svc] = sk
		}
	}
	sk.Add(h, w, svc)
}

// forget drops the sketch of a service id that is being freed, so that the service that
// reuses the id starts without it.
func (s *selector) forget(svc uint32) {
	for f := range s.svc {
		if int(svc) < len(s.svc[f]) {
			s.svc[f][svc] = nil
		}
	}
}

// rerank promotes and demotes (see selector) among the series of tables, in resources res, at
// a swap; full is the buffer of the interval that ended, whose rows count the spans of every
// series that received any, and epoch the new active one's.
func (s *selector) rerank(tables []*seriesTable, res *resourceTable, epoch uint32, full *series.DeltaBuffer) {
	// Reservations not taken within an interval are given back: a series promoted and not
	// seen since is not busy.
	clear(s.admitted)
	for f := range s.svcReserved {
		clear(s.svcReserved[f])
		s.reserved[f] = 0
	}
	for f, t := range tables {
		s.rerankFamily(res, f, t, epoch, full)
		s.fresh[f] = s.fresh[f][:0]
		for _, sk := range s.svc[f] {
			if sk != nil {
				sk.Reset()
			}
		}
		if sk := s.global[f]; sk != nil {
			sk.Reset()
		}
	}
}

func (s *selector) rerankFamily(res *resourceTable, f int, t *seriesTable, epoch uint32, full *series.DeltaBuffer) {
	// The full scopes and their candidates, heaviest first.
	s.top, s.scopes = s.top[:0], s.scopes[:0]
	s.scopeOfSvc = s.scopeOfSvc[:0]
	s.scopeOfSvc = append(s.scopeOfSvc, make([]int32, len(res.svcRefs))...)
	for i := range s.scopeOfSvc {
		s.scopeOfSvc[i] = -1
	}
	for svc, sk := range s.svc[f] {
		if sk == nil || sk.Len() == 0 || s.maxService == 0 || res.svcSeries[f][svc] < s.maxService {
			continue // a scope with room lets its refused series in at their next span
		}
		lo := len(s.top)
		if s.top = sk.Top(s.top, minPromote); len(s.top) > lo {
			s.scopeOfSvc[svc] = int32(len(s.scopes))
			s.scopes = append(s.scopes, rankScope{svc: uint32(svc), kind: series.ServiceOverflow, lo: lo, hi: len(s.top)})
		}
	}
	globalIdx := -1
	if sk := s.global[f]; sk != nil && sk.Len() > 0 && s.maxSeries > 0 && t.n >= s.maxSeries {
		lo := len(s.top)
		if s.top = sk.Top(s.top, minPromote); len(s.top) > lo {
			globalIdx = len(s.scopes)
			s.scopes = append(s.scopes, rankScope{svc: globalScope, kind: series.GlobalOverflow, lo: lo, hi: len(s.top)})
		}
	}
	if len(s.scopes) == 0 {
		return
	}

	// The lightest series of each scope, as many as it has candidates: one pass over the
	// family's series, a bounded max-heap per scope.
	n := 0
	for i := range s.scopes {
		s.scopes[i].wOff = n
		n += s.scopes[i].hi - s.scopes[i].lo
	}
	s.weak = slices.Grow(s.weak[:0], n)[:n]
	s.markSkipped(res, f, t)
	rows := &full.Fams[f].Rows
	filled := epoch - 1 // the epoch of full's rows (swap has moved on)
	for id := range t.meta {
		m := &t.meta[id]
		if m.keyLen == 0 || m.epoch == demotedEpoch || s.skip[id/64]&(1<<(id%64)) != 0 {
			continue
		}
		var count uint64
		if m.epoch == filled {
			count = rows.At(int(m.row)).Count
		}
		w := weakSeries{count: count, id: uint32(id)}
		if si := s.scopeOfSvc[res.all[m.res].svc]; si >= 0 {
			s.offerWeak(&s.scopes[si], w)
		}
		if globalIdx >= 0 {
			s.offerWeak(&s.scopes[globalIdx], w)
		}
	}

	for i := range s.scopes {
		sc := &s.scopes[i]
		weak := s.weak[sc.wOff : sc.wOff+sc.wLen]
		slices.SortFunc(weak, func(x, y weakSeries) int {
			switch {
			case x.count < y.count:
				return -1
			case x.count > y.count:
				return 1
			}
			return int(x.id) - int(y.id)
		})
		j := 0
		for _, c := range s.top[sc.lo:sc.hi] {
			for j < len(weak) && t.meta[weak[j].id].epoch == demotedEpoch {
				j++ // demoted in another scope already
			}
			if j == len(weak) {
				break
			}
			w := weak[j]
			if c.Guaranteed() <= promoteFactor*w.count {
				break // candidates only get lighter and series heavier from here
			}
			if _, dup := s.admitted[c.Key]; dup || hasCountedSeries(t, c.Key) {
				// Promoted in another scope already, or it got its series when room opened
				// during the interval (an expiry): nothing to promote.
				continue
			}
			if sc.kind == series.GlobalOverflow && s.maxService > 0 &&
				res.svcSeries[f][c.Tag]+s.svcReservedOf(f, c.Tag) >= s.maxService &&
				res.all[t.meta[w.id].res].svc != c.Tag {
				continue // its own service is at its budget now: it would be refused anyway
			}
			s.demote(res, f, t, w.id)
			s.admit(f, sc.kind, c.Tag, c.Key)
			s.demotedSeries[sc.kind].Add(1)
			j++
		}
	}
}

// offerWeak keeps w among the lightest series of sc: a max-heap by count of capacity
// hi-lo, in s.weak.
func (s *selector) offerWeak(sc *rankScope, w weakSeries) {
	h := s.weak[sc.wOff : sc.wOff+sc.hi-sc.lo]
	if sc.wLen < len(h) {
		i := sc.wLen
		h[i] = w
		sc.wLen++
		for i > 0 {
			p := (i - 1) / 2
			if h[p].count >= h[i].count {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		return
	}
	if w.count >= h[0].count {
		return
	}
	h[0] = w
	for i := 0; ; {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h[c+1].count > h[c].count {
			c++
		}
		if h[c].count <= h[i].count {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// markSkipped sets in skip the bits of the series of family f (table t) that are never
// demoted: its overflow series, whose ids the resources hold (so no key is read), and the
// series promoted during the interval, found by their hashes (a colliding series is spared
// with them, which only delays its demotion).
func (s *selector) markSkipped(res *resourceTable, f int, t *seriesTable) {
	s.skip = s.skip[:0]
	s.skip = append(s.skip, make([]uint64, (len(t.meta)+63)/64)...)
	set := func(id uint32) { s.skip[id/64] |= 1 << (id % 64) }
	for rid := range res.all {
		r := &res.all[rid]
		if !r.live {
			continue
		}
		if id1 := r.overflow[f]; id1 != 0 {
			set(id1 - 1)
		}
		for _, id1 := range r.capOverflow[f] {
			if id1 != 0 {
				set(id1 - 1)
			}
		}
	}
	for _, h := range s.fresh[f] {
		p := t.index.Probe(h)
		for id, ok := p.Next(); ok; id, ok = p.Next() {
			set(id)
		}
	}
}

func (s *selector) svcReservedOf(f int, svc uint32) int32 {
	service, _ := s.reservedFor(f, svc)
	return service
}

// admit reserves a slot of service svc and family f for the series hashing to h, promoted in
// the scope of cap k.
func (s *selector) admit(f int, k series.Overflow, svc uint32, h uint64) {
	s.admitted[h] = admission{fam: uint8(f), kind: k, svc: svc}
	if int(svc) >= len(s.svcReserved[f]) {
		s.svcReserved[f] = append(s.svcReserved[f], make([]int32, int(svc)+1-len(s.svcReserved[f]))...)
	}
	s.svcReserved[f][svc]++
	s.reserved[f]++
}

// demote takes series id out of the caps' counts (see selector). It expires as idle series
// do; where series never expire (series_expiration 0 with cumulative temporality) it stays,
// its cumulative value exported unchanged, as every series there does.
func (s *selector) demote(res *resourceTable, f int, t *seriesTable, id uint32) {
	m := &t.meta[id]
	m.epoch = demotedEpoch
	t.n--
	res.svcSeries[f][res.all[m.res].svc]--
}

// hasCountedSeries reports whether a series whose identity hashes to h has a slot (exists and
// is not demoted). A colliding series answers for it too, which only skips a promotion.
func hasCountedSeries(t *seriesTable, h uint64) bool {
	p := t.index.Probe(h)
	for id, ok := p.Next(); ok; id, ok = p.Next() {
		if t.meta[id].epoch != demotedEpoch {
			return true
		}
	}
	return false
}
