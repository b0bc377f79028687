package aggregate // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/aggregate"

import (
	"slices"
	"sync/atomic"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/telemetry"
)

// selector chooses, under cap_selection.by: traffic, which series max_series and
// max_series_per_service keep once full: the busiest rather than the first.
//
// It belongs to the aggregator and runs on its goroutine only, so it takes no lock and
// shares nothing with the producers or the flusher:
//
//   - every span a cap refuses is counted, exactly, by its series' identity hash, in the
//     family's refused table (refused.go; memory bounded by cap_selection.memory_mib). The
//     series that have a slot need no table: the interval's delta rows count them exactly;
//   - at once: a refused series whose chain reaches minPromote spans replaces an idle series
//     of its scope, one that received no span since the chain began (victims.go): the idle
//     series gives up its place (below) and the refused series gets its series with this span.
//     After a burst of IDs has filled a cap, every operation that keeps coming has its own
//     series from its third span, however many arrive at once, as long as IDs are idle;
//   - at each swap (rerank), in each full scope, the refused series that received the most
//     spans in the interval are matched with the series of the scope that received the
//     fewest, heaviest against lightest; a refused series that received more than twice as
//     many spans in the interval (hysteresis: a pair of similar series never trades places
//     back and forth), and whose chain has at least minPromote, is promoted, the other gives
//     up its place. This is the path for caps held by series that are all busy, and for
//     rare series (a span a few seconds) whose interval count alone is small;
//   - a series promoted at a swap gets a reservation: the slot its rival gave up is kept for
//     it (other new series still find the scope full) until its next span creates it. A
//     reservation not taken by the next swap is given back. A series promoted either way is
//     spared at the next swap, where its count covers only part of the interval (fresh);
//   - a series gives up its place by expiring at once with delta temporality, where the
//     downstream holds the running totals and the series has nothing to carry on (an id
//     returning later starts from its return, after its last export); with cumulative
//     temporality it is demoted, so that its total stays in the output: it stays in the
//     table, marked by demotedEpoch, out of the caps' counts; its later spans go to the
//     overflow series of its service, kind and status code (counted in the refused table
//     again, so it can come back), it gets no rows, and so it is no longer updated and
//     expires like an idle series. Its cumulative value stays where it was; nothing is taken
//     back from any series, so every total is exact at every flush. A family holds at most
//     maxDemoted demoted series (an eighth of its series, at least minDemotedKept): beyond,
//     no series is promoted in it until some expire, so that memory stays bounded.
type selector struct {
	isDelta       bool  // series give up their place by expiring (see above)
	maxSeries     int   // max_series; 0: none
	maxService    int32 // max_series_per_service; 0: none
	window        int64 // ns: the longest gap a refused series' chain bridges
	interval      int64 // ns: the flush interval
	promoted      *[series.OverflowKinds]atomic.Int64
	demotedSeries *[series.OverflowKinds]atomic.Int64

	budget  refusedBudget
	refused [series.MaxFamilies]refusedTable
	idle    [series.MaxFamilies]victims
	demoted [series.MaxFamilies]int // series held demoted

	// drop expires series id of table t at once and lists it in d (limits.evict).
	drop func(t *seriesTable, d *series.DeltaFamily, id uint32)

	// Reservations of series promoted at the last swap and not yet created, by identity hash.
	admitted    map[uint64]admission
	svcReserved [series.MaxFamilies][]int32 // by service id
	reserved    [series.MaxFamilies]int
	// Ids of the series promoted since the last re-ranking: they are not demoted at the next
	// one, where their count covers only part of the interval.
	fresh [series.MaxFamilies][]uint32

	// rerank's scratch, kept for the next swap.
	cands      []candidate
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

// candidate is a refused series at a re-ranking: its spans in the interval that ended.
type candidate struct {
	hash  uint64
	count uint32
	scope uint32 // refusedEntry.scope
}

// rankScope is a full scope with candidates at a re-ranking: its candidates are cands[lo:hi],
// its lightest series weak[wOff:wOff+wLen], a max-heap until matched, of capacity wCap: its
// candidates, and those of the scopes that may take the same series first (max_series and a
// service's budget both full), so that each finds a rival for every candidate.
type rankScope struct {
	svc              uint32 // the service; globalScope for max_series
	kind             series.Overflow
	lo, hi           int
	wOff, wLen, wCap int
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

// minPromote is the fewest spans a refused series must have received, in its chain, to be
// promoted, at once or at a swap. Three, so that an ID seen once or twice (IDs drawn at random
// repeat) never is: with two, a burst of a million IDs drawn from two million promoted
// ~180,000 of them that came twice, each a new series downstream. At a swap it is the chain
// that counts, not the interval's spans: an error variant at one span a second sent 2 spans
// in some 5 s intervals, and stayed refused for 18 s of a minute when the interval's count
// had to reach 3.
const minPromote = 3

// promoteFactor is the hysteresis: a refused series takes a slot only from a series that
// received less than 1/promoteFactor of its spans.
const promoteFactor = 2

// windowIntervals is the longest gap, in flush intervals, between two spans of a refused
// series' chain: a series that sends one span every two or three intervals still builds one.
const windowIntervals = 4

// minDemotedKept is the demoted series a family may always hold (maxDemoted).
const minDemotedKept = 1024

// newSelector returns the selector of p's caps, counting promotions and demotions in tel; nil
// by arrival or without caps.
func newSelector(p *series.Plan, tel *telemetry.Telemetry) *selector {
	if !p.ByTraffic || (p.MaxSeries == 0 && p.MaxService == 0) {
		return nil
	}
	interval := int64(p.FlushInterval)
	s := &selector{isDelta: p.IsDelta, maxSeries: p.MaxSeries, maxService: p.MaxService,
		interval: interval, window: windowIntervals * interval,
		promoted: &tel.PromotedSeries, demotedSeries: &tel.DemotedSeries,
		budget: refusedBudget{limit: p.SelectionBytes}, admitted: map[uint64]admission{}}
	for f := range s.refused {
		s.refused[f].budget = &s.budget
	}
	return s
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
	return ad.kind, true
}

// count adds w spans at ts of the series hashing to h, of service svc, that cap k refused, and
// returns its entry in the refused table (nil when the table had no room for it).
func (s *selector) count(f int, svc uint32, h, w uint64, ts int64, k series.Overflow) *refusedEntry {
	scope := svc
	if k == series.GlobalOverflow {
		scope |= globalScopeBit
	}
	return s.refused[f].sight(h, uint32(min(w, 1<<32-1)), ts, s.window, scope)
}

// victim returns an idle series that the refused series e, of service svc and family f (table
// t), refused by cap k, may replace at once: one that received no span since e's chain began.
func (s *selector) victim(f int, t *seriesTable, res *resourceTable, svc uint32, k series.Overflow, e *refusedEntry, epoch uint32, now int64) (uint32, bool) {
	if e.chain < minPromote || !s.mayGiveUp(f, t) {
		return 0, false
	}
	v := &s.idle[f]
	if !v.builtIn(epoch) {
		s.markSkipped(res, f, t)
		v.build(t, res, epoch, now, s.interval, s.skip, nil)
	}
	return v.pop(t, res, svc, k == series.GlobalOverflow, e.first, epoch)
}

// mayGiveUp reports whether a series of family f (table t) may give up its place now: with
// delta temporality always, with cumulative while the family holds fewer than maxDemoted
// demoted series.
func (s *selector) mayGiveUp(f int, t *seriesTable) bool {
	return s.isDelta || s.demoted[f] < max(minDemotedKept, t.n/8)
}

// giveUp takes series id of family f (table t, resources res) out of the caps: it expires at
// once, listed in d, with delta temporality, and is demoted with cumulative (see selector).
func (s *selector) giveUp(res *resourceTable, f int, t *seriesTable, d *series.DeltaFamily, id uint32) {
	if s.isDelta {
		s.drop(t, d, id)
		return
	}
	s.demote(res, f, t, id)
}

// created tells the selector that the series hashing to h, id in family f, has its own series
// (new, restored or promoted): it leaves the refused table; promoted, it is spared at the next
// re-ranking.
func (s *selector) created(f int, h uint64, id uint32, promoted bool) {
	s.refused[f].remove(h)
	if promoted {
		s.fresh[f] = append(s.fresh[f], id)
	}
}

// forget drops what the selector keeps of a service id that is being freed, so that the
// service that reuses the id starts without it: its reservations. Its refused series leave
// the table when their entries age out.
func (s *selector) forget(svc uint32) {
	for f := range s.svcReserved {
		if int(svc) < len(s.svcReserved[f]) {
			s.reserved[f] -= int(s.svcReserved[f][svc])
			s.svcReserved[f][svc] = 0
		}
	}
}

// bytes is the memory the selector holds: its refused tables and victim lists.
func (s *selector) bytes() int {
	n := s.budget.used
	for f := range s.idle {
		n += s.idle[f].bytes()
	}
	return n
}

// rerank promotes and demotes (see selector) among the series of tables, in resources res, at
// a swap at now; full is the buffer of the interval that ended, whose rows count the spans of
// every series that received any, and epoch the new active one's.
func (s *selector) rerank(tables []*seriesTable, res *resourceTable, epoch uint32, now int64, full *series.DeltaBuffer) {
	// Reservations not taken within an interval are given back: a series promoted and not
	// seen since is not busy.
	clear(s.admitted)
	for f := range s.svcReserved {
		clear(s.svcReserved[f])
		s.reserved[f] = 0
	}
	for f, t := range tables {
		s.rerankFamily(res, f, t, epoch, now, full)
		if s.refused[f].n > 0 {
			// Refused series are coming: list the idle series now, while the counts of the
			// interval that ended can be read (victims.go).
			s.markSkipped(res, f, t)
			s.idle[f].build(t, res, epoch, now, s.interval, s.skip, &full.Fams[f].Rows)
		}
		s.fresh[f] = s.fresh[f][:0]
	}
}

func (s *selector) rerankFamily(res *resourceTable, f int, t *seriesTable, epoch uint32, now int64, full *series.DeltaBuffer) {
	// The candidates: the refused series that received spans in the interval, with a chain of
	// at least minPromote spans, by scope, heaviest (in the interval) first.
	s.cands = s.cands[:0]
	s.refused[f].sweep(now, s.window, func(e *refusedEntry) {
		if e.chain >= minPromote {
			s.cands = append(s.cands, candidate{hash: e.hash, count: e.count, scope: e.scope})
		}
	})
	if len(s.cands) == 0 {
		return
	}
	slices.SortFunc(s.cands, func(x, y candidate) int {
		switch {
		case x.scope != y.scope:
			if x.scope < y.scope {
				return -1
			}
			return 1
		case x.count != y.count:
			if x.count > y.count {
				return -1
			}
			return 1
		case x.hash < y.hash:
			return -1
		case x.hash > y.hash:
			return 1
		}
		return 0
	})

	// The full scopes: a scope with room lets its refused series in at their next span.
	s.scopes = s.scopes[:0]
	s.scopeOfSvc = growInt32(s.scopeOfSvc, len(res.svcRefs))
	for i := range s.scopeOfSvc {
		s.scopeOfSvc[i] = -1
	}
	globalIdx := -1
	for lo := 0; lo < len(s.cands); {
		scope := s.cands[lo].scope
		hi := lo + 1
		for hi < len(s.cands) && s.cands[hi].scope == scope {
			hi++
		}
		svc := scope &^ globalScopeBit
		switch {
		case scope&globalScopeBit != 0:
			if s.maxSeries > 0 && t.n >= s.maxSeries {
				globalIdx = len(s.scopes)
				s.scopes = append(s.scopes, rankScope{svc: globalScope, kind: series.GlobalOverflow, lo: lo, hi: hi})
			}
		case int(svc) < len(s.scopeOfSvc) && s.maxService > 0 && res.svcSeries[f][svc] >= s.maxService:
			s.scopeOfSvc[svc] = int32(len(s.scopes))
			s.scopes = append(s.scopes, rankScope{svc: svc, kind: series.ServiceOverflow, lo: lo, hi: hi})
		}
		lo = hi
	}
	if len(s.scopes) == 0 {
		return
	}

	// The lightest series of each scope, as many as it (and the scopes that may take them
	// first) has candidates: one pass over the family's series, a bounded max-heap per scope.
	svcCands, globalCands := 0, 0
	for i := range s.scopes {
		if i == globalIdx {
			globalCands = s.scopes[i].hi - s.scopes[i].lo
		} else {
			svcCands += s.scopes[i].hi - s.scopes[i].lo
		}
	}
	n := 0
	for i := range s.scopes {
		sc := &s.scopes[i]
		sc.wOff, sc.wCap = n, sc.hi-sc.lo+globalCands
		if i == globalIdx {
			sc.wCap = globalCands + svcCands
		}
		n += sc.wCap
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
		for _, c := range s.cands[sc.lo:sc.hi] {
			for j < len(weak) && (t.meta[weak[j].id].keyLen == 0 || t.meta[weak[j].id].epoch == demotedEpoch) {
				j++ // gone or demoted in another scope already
			}
			if j == len(weak) {
				break
			}
			w := weak[j]
			if uint64(c.count) <= promoteFactor*w.count {
				break // candidates only get lighter and series heavier from here
			}
			if _, dup := s.admitted[c.hash]; dup {
				continue // promoted in another scope already
			}
			svc := c.scope &^ globalScopeBit
			if sc.kind == series.GlobalOverflow && s.maxService > 0 &&
				res.svcSeries[f][svc]+s.svcReservedOf(f, svc) >= s.maxService &&
				res.all[t.meta[w.id].res].svc != svc {
				continue // its own service is at its budget now: it would be refused anyway
			}
			if !s.mayGiveUp(f, t) {
				return // enough demoted series held: none more until some expire
			}
			s.giveUp(res, f, t, &full.Fams[f], w.id)
			s.admit(f, sc.kind, svc, c.hash)
			s.demotedSeries[sc.kind].Add(1)
			j++
		}
	}
}

// offerWeak keeps w among the lightest series of sc: a max-heap by count of capacity wCap,
// in s.weak.
func (s *selector) offerWeak(sc *rankScope, w weakSeries) {
	h := s.weak[sc.wOff : sc.wOff+sc.wCap]
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

// markSkipped sets in skip the bits of the series of family f (table t) that never give up
// their place: its overflow series, whose ids the resources hold (so no key is read), and the
// series promoted since the last re-ranking.
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
	for _, id := range s.fresh[f] {
		if int(id) < len(t.meta) {
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
	s.demoted[f]++
}
