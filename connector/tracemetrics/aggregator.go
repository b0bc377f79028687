package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"bytes"
	"slices"

	"github.com/jonboulle/clockwork"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/clustering"
	"github.com/otelcol-red/otelcol-red/internal/hash"
	"github.com/otelcol-red/otelcol-red/internal/intake"
	"github.com/otelcol-red/otelcol-red/internal/pipeline"
	"github.com/otelcol-red/otelcol-red/internal/sampling"
)

// aggregator is the pipeline's consumer (internal/pipeline): the single consumer of the intake
// ring. It alone owns the series tables and the active delta buffer, so none of them needs a
// lock. It never builds pmetric data: at each flush it swaps the filled delta buffer for the
// spare the flusher handed back, and carries on with that one.
type aggregator struct {
	*plan // the configuration, derived once

	touch uint32 // see touchSeries

	ringCap   int
	hints     *intake.SizeHints // the producers' batch sizes (wakeItems)
	wakeItems int
	clock     clockwork.Clock

	resources []aggResource
	resIndex  hash.Index
	resFree   []uint32
	liveRes   int

	services   map[string]uint32
	svcNames   []string
	svcRefs    []int32 // resources per service id
	svcFree    []uint32
	svcSeries  [maxFamilies][]int32
	tables     []*seriesTable
	active     *deltaBuffer
	epoch      uint32 // incremented at each swap; rows of older epochs belong to other buffers
	spans      int64  // spans of the round being applied
	scratchRes []uint32
	resIDs     []uint32 // apply: aggregator resource id of each batch resource
	rows       []int32  // apply: active row of each batch series
	ovKey      []byte   // scratch: the key of a cap overflow series (appendCapOverflowKey)

	sel    *selector // cap_selection by traffic (selection.go); nil by arrival or without caps
	demand *demand   // series each limit is offered (demand.go); nil without limits
	// clusters learns span-name templates from the names the producers found none for
	// (span_name.clustering); nil when off. The learner is single-threaded, and the aggregator
	// is the one goroutine that sees every batch, after the producers are done with it.
	clusters *clustering.Clusterer

	tel *telemetry
}

type aggResource struct {
	hash     uint64
	key      []byte
	svc      uint32
	lastSeen int64
	live     bool
	series   [maxFamilies]int32  // live series per family (aggregation_cardinality_limit, cumulative)
	touched  [maxFamilies]int32  // series touched this interval (aggregation_cardinality_limit, delta)
	overflow [maxFamilies]uint32 // aggregation_cardinality_limit's overflow series id+1, 0 when none

	// max_series and max_series_per_service's overflow series per span kind and status code
	// (capOverflowSlot), id+1, 0 when none.
	capOverflow [maxFamilies][capOverflowSlots]uint32
}

// wakeSeries is how many series' worth of queued batches the aggregator lets queue before it
// is woken, counted at the size of the largest recent batch (sizeHints). Waking it costs the
// producer that completes its batch a futex call, so it should happen rarely; but every queued
// batch is alive until applied, and the free list keeps as many as were ever alive at once,
// each at the size of the largest request. So the count follows the largest batches, not the
// average: 16 batches when they hold 1000 series, 128 (an eighth of the default ring) when
// they hold 10.
const wakeSeries = 16 * 1024

// firstSeriesPerBatch is the batch size assumed until the size hints know one: large, so the
// aggregator is woken often rather than letting many large batches pile up.
const firstSeriesPerBatch = 1000

// wakeItems returns the queued batches to wait for when batches hold up to seriesPerBatch
// series: wakeSeries worth, at least 1 and at most an eighth of the ring (so producers rarely
// find it full while the aggregator sleeps).
func wakeItems(ringCap, seriesPerBatch int) int {
	return min(max(1, wakeSeries/max(1, seriesPerBatch)), max(1, ringCap/8))
}

var _ pipeline.Consumer[deltaBatch, *deltaBuffer] = (*aggregator)(nil)

// WakeItems is how many queued batches wake the aggregator: wakeSeries' worth at the size of
// the largest recent batches.
func (a *aggregator) WakeItems() int { return a.wakeItems }

// Apply folds batch b into the active delta buffer and hands the span names it did not find
// templates for to the learner.
func (a *aggregator) Apply(b *deltaBatch, now int64) {
	a.apply(b)
	if a.clusters != nil {
		a.clusters.Learn(&b.clusters, now)
	}
	a.spans += b.spans
}

// Applied ends a round: one atomic add for its spans however many batches and spans it held,
// the templates learned from them published once, and the wake count set from the batches'
// sizes.
func (a *aggregator) Applied(_ int, now int64) {
	a.tel.aggregatedSpans.Add(a.spans)
	a.spans = 0
	if a.clusters != nil {
		a.clusters.Publish() // what the learner learned, for the producers
	}
	a.wakeItems = wakeItems(a.ringCap, int(a.hints.Get(hintSeries)))
	a.tel.seriesLive.Store(int64(a.liveSeries()))
}

func (a *aggregator) liveSeries() int {
	n := 0
	for _, t := range a.tables {
		n += t.n
	}
	return n
}

// apply folds one batch into the active delta buffer.
func (a *aggregator) apply(b *deltaBatch) {
	// The plan's facts in locals: the loops below store through row pointers, after which
	// the compiler would load them again from the plan for every series.
	nb, exemplars, expoSize := a.nb, a.exemplars, a.expoSize
	a.resIDs = a.resIDs[:0]
	for i := range b.resources {
		a.resIDs = append(a.resIDs, a.resolveResource(b, &b.resources[i]))
	}
	a.rows = a.rows[:0]
	var overflowSpans [overflowKinds]int64
	ahead := a.liveSeries() >= touchMinSeries
	for i := range b.series {
		if ahead && i%touchAhead == 0 && len(b.series)-i >= minTouch {
			a.touch ^= touchSeries(a.tables, b.series[i:min(i+touchAhead, len(b.series))])
		}
		s := &b.series[i]
		t := a.tables[s.fam]
		d := &a.active.fams[s.fam]
		rid := a.resIDs[s.res]
		w := uint64(s.count)
		if b.weighted {
			w = max(w, uint64(b.seriesW[i]))
		}
		id, overflow := a.resolveSeries(t, d, rid, b.bytes(s.key), s.hash, b.ts, w)
		overflowSpans[overflow] += int64(s.count)
		if a.demand != nil {
			switch {
			case overflow != noOverflow:
				a.demand.refused(s.hash, overflow)
			case t.meta[id].epoch != a.epoch:
				a.demand.admitted(s.hash) // once per series and interval
			}
		}
		row := a.activeRow(t, d, id, b.ts)
		r := d.rows.at(int(row))
		// activeRow has just read the series' record, so stamping it here costs no miss; a
		// stamp in the interval row would cost every row eight bytes, in both buffers.
		if m := &t.meta[id]; m.lastSeen < b.ts {
			m.lastSeen = b.ts
		}
		switch {
		case !b.weighted:
			r.count += s.count
		case !t.fam.duration:
			// With durations the observations below count the spans (sampling.go).
			r.count += sampling.Round(t.carry(id), b.seriesW[i])
		}
		if t.fam.duration {
			r.sum += s.sum
			if nb == 0 {
				e := d.expo.at(int(row))
				e.min = min(e.min, s.min)
				e.max = max(e.max, s.max)
			}
		}
		// The limit overflow series has no exemplars, as in spanmetrics; a cap overflow
		// series keeps them: they are traces of what exploded. (Without service.name,
		// span.kind and status.code, the caps use the limit overflow series.)
		if s.exN > 0 && (overflow == noOverflow || overflow != limitOverflow && a.hasCapOverflow()) {
			for _, e := range b.exemplars[s.exOff : s.exOff+s.exN] {
				offerExemplar(&d.exemplars, &r.exOff, &r.exN, exemplars, &e)
			}
		}
		a.rows = append(a.rows, row)
	}
	obs := b.obs
	if b.weighted {
		a.applyWeightedObs(b) // counts and buckets by weight (sampling.go)
		obs = nil
	}
	for _, o := range obs {
		s := &b.series[o.series]
		d := &a.active.fams[s.fam]
		row := a.rows[o.series]
		if nb > 0 {
			d.observe(int(row), nb, int(o.code))
			continue
		}
		e := d.expo.at(int(row))
		if o.code == zeroCode {
			e.zero++
		} else {
			e.sketch.add(&d.slab, o.code, 1, expoSize)
		}
	}
	for k := limitOverflow; k < overflowKinds; k++ {
		if overflowSpans[k] > 0 {
			a.tel.overflowSpans[k].Add(overflowSpans[k])
		}
	}
	if b.invalidWeights > 0 {
		a.tel.invalidWeights.Add(b.invalidWeights)
	}
}

// applyWeightedObs folds the observations of a weighted batch into the active buffer: each
// span's weight, rounded with its series' carry, counts in the row and in the span's bucket.
// apply has resolved the rows (a.rows).
func (a *aggregator) applyWeightedObs(b *deltaBatch) {
	nb, expoSize := a.nb, a.expoSize
	for j, o := range b.obs {
		s := &b.series[o.series]
		d := &a.active.fams[s.fam]
		row := a.rows[o.series]
		r := d.rows.at(int(row))
		k := sampling.Round(a.tables[s.fam].carry(r.id), b.obsW[j])
		r.count += k
		if nb > 0 {
			d.observeN(int(row), nb, int(o.code), k)
			continue
		}
		e := d.expo.at(int(row))
		if o.code == zeroCode {
			e.zero += k
		} else {
			e.sketch.add(&d.slab, o.code, k, expoSize)
		}
	}
}

func (a *aggregator) resolveResource(b *deltaBatch, br *batchResource) uint32 {
	key := b.bytes(br.key)
	p := a.resIndex.Probe(br.hash)
	for rid, ok := p.Next(); ok; rid, ok = p.Next() {
		if r := &a.resources[rid]; bytes.Equal(r.key, key) {
			r.lastSeen = max(r.lastSeen, b.ts)
			return rid
		}
	}
	rid, ok := reuseID(&a.resFree)
	if !ok {
		rid = uint32(len(a.resources))
		a.resources = append(a.resources, aggResource{})
	}
	a.resources[rid] = aggResource{
		hash: br.hash, key: slices.Clone(key), svc: a.serviceID(b.bytes(br.service)),
		lastSeen: b.ts, live: true,
	}
	a.resIndex.Insert(br.hash, rid)
	a.liveRes++
	off := len(a.active.resAttrs)
	a.active.resAttrs = append(a.active.resAttrs, b.bytes(br.full)...)
	a.active.newResources = append(a.active.newResources, newResource{id: rid, attrs: ref{uint32(off), br.full.n}})
	return rid
}

func (a *aggregator) serviceID(name []byte) uint32 {
	if id, ok := a.services[string(name)]; ok {
		a.svcRefs[id]++
		return id
	}
	id, ok := reuseID(&a.svcFree)
	if !ok {
		id = uint32(len(a.svcRefs))
		a.svcRefs = append(a.svcRefs, 0)
		a.svcNames = append(a.svcNames, "")
		for f := range a.svcSeries {
			a.svcSeries[f] = append(a.svcSeries[f], 0)
		}
	}
	a.services[string(name)] = id
	a.svcNames[id] = string(name)
	a.svcRefs[id] = 1
	return id
}

// resolveSeries finds or creates the series with key in resource rid, applying the limits;
// it returns the resource's overflow series, and which kind, when a limit refuses a new series.
//
// aggregation_cardinality_limit is spanmetrics' and is checked first, with spanmetrics'
// overflow series. max_series and max_series_per_service are ours: their overflow series keeps
// the service name, span kind and status code of the refused series, so that calls and errors
// per service and kind stay exact while a service explodes. Neither limit ever takes a series
// that exists: a refused series goes to overflow, the series of other services are untouched.
//
// With cap_selection by traffic (selection.go) the caps keep slots for the series promoted at
// the last flush, count the spans they refuse, and a demoted series found here is refused like
// a new one. w is the weight of the series' spans in the batch.
func (a *aggregator) resolveSeries(t *seriesTable, d *deltaFamily, rid uint32, key []byte, h uint64, ts int64, w uint64) (uint32, overflowKind) {
	r := &a.resources[rid]
	f := t.fam.index
	if id, ok := t.find(h, rid, identity(key, t.fam)); ok {
		if t.meta[id].epoch == demotedEpoch {
			if k := a.capRefuses(t, r, h, w); k != noOverflow {
				return a.capOverflowSeries(t, d, rid, key, ts), k
			}
			a.restore(t, r, id)
		}
		if a.isDelta && a.cardLimit > 0 && t.meta[id].epoch != a.epoch {
			// spanmetrics' delta state starts empty each interval, so its cardinality limit
			// counts the series seen in this interval.
			if r.touched[f] >= a.cardLimit {
				return a.overflowSeries(t, d, rid, ts), limitOverflow
			}
			r.touched[f]++
		}
		return id, noOverflow
	}
	switch {
	case a.cardLimit > 0 && !a.isDelta && r.series[f] >= a.cardLimit,
		a.cardLimit > 0 && a.isDelta && r.touched[f] >= a.cardLimit:
		return a.overflowSeries(t, d, rid, ts), limitOverflow
	}
	if k := a.capRefuses(t, r, h, w); k != noOverflow {
		return a.capOverflowSeries(t, d, rid, key, ts), k
	}
	id := t.insert(key, h, rid, ts)
	r.series[f]++
	r.touched[f]++
	a.svcSeries[f][r.svc]++
	a.announce(d, id, &t.meta[id], ts)
	return id, noOverflow
}

// capRefuses returns the cap that refuses a series of resource r in table t a slot, or
// noOverflow. max_series_per_service is checked first: raising max_series would not let the
// series in. Slots reserved for promoted series count as taken, except for the series they
// are reserved for; a refused series' w spans are counted for the next re-ranking.
func (a *aggregator) capRefuses(t *seriesTable, r *aggResource, h, w uint64) overflowKind {
	f := int(t.fam.index)
	k := a.capFull(t, r.svc)
	if k == noOverflow || a.sel == nil {
		return k
	}
	if by, ok := a.sel.claim(f, r.svc, h); ok {
		if k = a.capFull(t, r.svc); k == noOverflow {
			a.tel.promotedSeries[by].Add(1)
			return noOverflow
		}
	}
	a.sel.count(f, r.svc, h, w, k)
	return k
}

func (a *aggregator) capFull(t *seriesTable, svc uint32) overflowKind {
	f := int(t.fam.index)
	svcReserved, reserved := a.sel.reservedFor(f, svc)
	switch {
	case a.maxService > 0 && a.svcSeries[f][svc]+svcReserved >= a.maxService:
		return serviceOverflow
	case a.maxSeries > 0 && t.n+reserved >= a.maxSeries:
		return globalOverflow
	}
	return noOverflow
}

// restore counts a demoted series against the caps again: it was promoted, or a cap has room.
func (a *aggregator) restore(t *seriesTable, r *aggResource, id uint32) {
	t.meta[id].epoch = a.epoch - 1 // not the active epoch: its next span adds a row
	t.n++
	a.svcSeries[t.fam.index][r.svc]++
}

func (a *aggregator) announce(d *deltaFamily, id uint32, m *seriesMeta, ts int64) {
	d.newSeries = append(d.newSeries, newSeries{id: id, res: m.res, keyLen: m.keyLen, created: ts, keyRef: m.keyRef})
}

// overflowSeries returns the resource's otel.metric.overflow=true series of the family. It is
// not in the hash index (the resource points at it) and counts against no limit.
func (a *aggregator) overflowSeries(t *seriesTable, d *deltaFamily, rid uint32, ts int64) uint32 {
	r := &a.resources[rid]
	f := t.fam.index
	if r.overflow[f] != 0 {
		return r.overflow[f] - 1
	}
	var kb [keyHeaderLen]byte
	id := t.insertOverflow(appendOverflowKey(kb[:0], r.hash, f), rid, ts)
	r.overflow[f] = id + 1
	a.announce(d, id, &t.meta[id], ts)
	return id
}

// capOverflowSeries returns the max_series/max_series_per_service overflow series of resource
// rid, family t, that has the service name, span kind and status code of the series whose key
// is key. Like the limit overflow series it is not in the hash index and counts against no
// limit: a resource has at most capOverflowSlots of them per family. With service.name,
// span.kind and status.code all excluded it is the limit overflow series (hasCapOverflow).
func (a *aggregator) capOverflowSeries(t *seriesTable, d *deltaFamily, rid uint32, key []byte, ts int64) uint32 {
	if !a.hasCapOverflow() {
		return a.overflowSeries(t, d, rid, ts)
	}
	slot := &a.resources[rid].capOverflow[t.fam.index][a.seriesOverflowSlot(key)]
	if *slot != 0 {
		return *slot - 1
	}
	a.ovKey = a.appendCapOverflowKey(a.ovKey[:0], key)
	id := t.insertOverflow(a.ovKey, rid, ts)
	*slot = id + 1
	a.announce(d, id, &t.meta[id], ts)
	return id
}

// activeRow returns the row of series id in the active delta buffer, adding it on the
// series' first span of the interval.
func (a *aggregator) activeRow(t *seriesTable, d *deltaFamily, id uint32, ts int64) int32 {
	m := &t.meta[id]
	if m.epoch == a.epoch {
		return m.row
	}
	m.epoch, m.row = a.epoch, d.newRow(id, ts, a.bucketsOf(t.fam), a.expoOf(t.fam))
	return m.row
}

// Swap makes spare, the buffer the flusher handed back, the active one, and returns the
// filled one for the flusher, with the series and resources that expired.
func (a *aggregator) Swap(spare *deltaBuffer, final bool) *deltaBuffer {
	a.reclaim(spare)
	full := a.active
	a.active = spare
	a.epoch++
	a.hints.Rotate()
	for f, t := range a.tables {
		if t.keys.wantsCompaction() {
			full.fams[f].moved = t.compactKeys(full.fams[f].moved)
		}
		full.fams[f].keys = t.keys.chunks
	}
	now := a.clock.Now().UnixNano()
	a.expire(now, full)
	// After a burst has expired, an index under 1/8 full gives its slots back; the check is
	// constant time, and the rebuild, linear in the live series, happens once per burst.
	for _, t := range a.tables {
		t.index.Fit()
	}
	if a.sel != nil && !final {
		a.sel.rerank(a, full)
	}
	a.demand.publish(now, a.tel)
	if a.clusters != nil {
		a.clusters.Expire(now) // template_expiration
	}
	if a.isDelta {
		for i := range a.resources {
			a.resources[i].touched = [maxFamilies]int32{}
		}
	}
	full.ts = now
	a.tel.seriesLive.Store(int64(a.liveSeries()))
	return full
}

// reclaim frees the ids expired at the previous swap: the flusher has now forgotten them.
func (a *aggregator) reclaim(b *deltaBuffer) {
	for f := range b.fams {
		t := a.tables[f]
		t.free = append(t.free, b.fams[f].expired...)
		b.fams[f].expired = b.fams[f].expired[:0]
	}
	a.resFree = append(a.resFree, b.expiredRes...)
	b.expiredRes = b.expiredRes[:0]
}

// expire drops idle series and resources; full carries the list to the flusher, which
// exports them one last time (spanmetrics removes expired state after building metrics).
func (a *aggregator) expire(now int64, full *deltaBuffer) {
	dead := a.scratchRes[:0]
	for rid := range a.resources {
		r := &a.resources[rid]
		if r.live && a.resourceIdle > 0 && now-r.lastSeen >= a.resourceIdle {
			dead = append(dead, uint32(rid))
		}
	}
	if over := a.liveRes - len(dead) - a.resourceCacheSize; over > 0 {
		// Least recently seen first, like spanmetrics' LRU of resources.
		var cand []uint32
		for rid := range a.resources {
			if r := &a.resources[rid]; r.live && !slices.Contains(dead, uint32(rid)) {
				cand = append(cand, uint32(rid))
			}
		}
		slices.SortStableFunc(cand, func(x, y uint32) int {
			lx, ly := a.resources[x].lastSeen, a.resources[y].lastSeen
			switch {
			case lx < ly:
				return -1
			case lx > ly:
				return 1
			}
			return 0
		})
		dead = append(dead, cand[:over]...)
	}
	for _, rid := range dead {
		a.resources[rid].live = false
	}
	idle := a.seriesIdle
	for f, t := range a.tables {
		if idle == 0 && len(dead) == 0 {
			break // nothing can expire: skip the O(series) scan that would hold up the drain
		}
		expired := full.fams[f].expired
		for id := range t.meta {
			m := &t.meta[id]
			if m.keyLen == 0 {
				continue
			}
			if !a.resources[m.res].live || (idle > 0 && now-m.lastSeen >= idle) {
				a.dropSeries(t, uint32(id))
				expired = append(expired, uint32(id))
			}
		}
		full.fams[f].expired = expired
	}
	for _, rid := range dead {
		r := &a.resources[rid]
		a.resIndex.Delete(r.hash, rid)
		if a.svcRefs[r.svc]--; a.svcRefs[r.svc] == 0 {
			delete(a.services, a.svcNames[r.svc])
			a.svcNames[r.svc] = ""
			a.svcFree = append(a.svcFree, r.svc)
			if a.sel != nil {
				a.sel.forget(r.svc)
			}
		}
		*r = aggResource{}
		a.liveRes--
		full.expiredRes = append(full.expiredRes, rid)
	}
	a.scratchRes = dead[:0]
}

func (a *aggregator) dropSeries(t *seriesTable, id uint32) {
	f := t.fam.index
	r := &a.resources[t.meta[id].res]
	switch key := t.key(id); {
	case isOverflowKey(key) && isCapOverflowKey(key):
		r.capOverflow[f][a.capOverflowSlot(key)] = 0
	case isOverflowKey(key):
		r.overflow[f] = 0
	default:
		r.series[f]--
		if t.meta[id].epoch != demotedEpoch { // a demoted series left the caps' counts already
			a.svcSeries[f][r.svc]--
			t.n--
		}
	}
	t.remove(id)
}
