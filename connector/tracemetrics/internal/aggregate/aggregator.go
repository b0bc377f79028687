package aggregate // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/aggregate"

import (
	"github.com/jonboulle/clockwork"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/clustering"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/telemetry"
	"github.com/otelcol-red/otelcol-red/internal/intake"
	"github.com/otelcol-red/otelcol-red/internal/latespans"
	"github.com/otelcol-red/otelcol-red/internal/pipeline"
	"github.com/otelcol-red/otelcol-red/internal/sampling"
)

// Aggregator is the pipeline's consumer (internal/pipeline): the single consumer of the intake
// ring. It alone owns the series tables, the resources and the active delta buffer, so none of
// them needs a lock. It never builds pmetric data: at each flush it swaps the filled delta
// buffer for the spare the flusher handed back, and carries on with that one.
type Aggregator struct {
	*series.Plan // the configuration, derived once

	touch uint32 // see touchSeries

	ringCap   int
	hints     *intake.SizeHints // the producers' batch sizes (wakeItems)
	wakeItems int
	clock     clockwork.Clock

	res    *resourceTable
	tables []*seriesTable
	limits *limits
	active *series.DeltaBuffer
	epoch  uint32           // incremented at each swap; rows of older epochs belong to other buffers
	spans  int64            // spans of the round being applied
	late   latespans.Counts // late_spans counts of the round being applied
	resIDs []uint32         // apply: aggregator resource id of each batch resource
	rows   []int32          // apply: active row of each batch series

	sel    *selector // cap_selection by traffic (selection.go); nil by arrival or without caps
	demand *demand   // series each limit is offered (demand.go); nil without limits
	// clusters learns span-name templates from the names the producers found none for
	// (span_name.clustering); nil when off. The learner is single-threaded, and the aggregator
	// is the one goroutine that sees every batch, after the producers are done with it.
	clusters *clustering.Clusterer

	tel *telemetry.Telemetry
}

// New returns the aggregator of plan p: its tables hash identities with keyHash; it wakes per
// WakeCount batches of the sizes hints tell, in a ring of ringCap; clusters (nil without
// span_name.clustering) learns the span names the producers found no template for.
func New(p *series.Plan, keyHash func([]byte) uint64, clock clockwork.Clock, hints *intake.SizeHints, ringCap int, tel *telemetry.Telemetry, clusters *clustering.Clusterer) *Aggregator {
	a := &Aggregator{
		Plan:      p,
		ringCap:   ringCap,
		hints:     hints,
		wakeItems: WakeCount(ringCap, FirstSeriesPerBatch),
		clock:     clock,
		res:       newResourceTable(),
		epoch:     1, // 0 marks a series without a row
		active:    series.NewDeltaBuffer(len(p.Families)),
		tel:       tel,
		sel:       newSelector(p, tel),
		demand:    newDemand(p, clock.Now().UnixNano()),
		clusters:  clusters,
	}
	a.limits = &limits{Plan: p, res: a.res, sel: a.sel, labels: newLabelLimits(p, clock.Now().UnixNano()), tel: tel}
	if a.sel != nil {
		a.sel.drop = a.limits.evict
	}
	for _, f := range p.Families {
		a.tables = append(a.tables, &seriesTable{fam: f, keyHash: keyHash})
	}
	return a
}

// wakeSeries is how many series' worth of queued batches the aggregator lets queue before it
// is woken, counted at the size of the largest recent batch (sizeHints). Waking it costs the
// producer that completes its batch a futex call, so it should happen rarely; but every queued
// batch is alive until applied, and the free list keeps as many as were ever alive at once,
// each at the size of the largest request. So the count follows the largest batches, not the
// average: 16 batches when they hold 1000 series, 128 (an eighth of the default ring) when
// they hold 10.
const wakeSeries = 16 * 1024

// FirstSeriesPerBatch is the batch size assumed until the size hints know one: large, so the
// aggregator is woken often rather than letting many large batches pile up.
const FirstSeriesPerBatch = 1000

// WakeCount returns the queued batches to wait for when batches hold up to seriesPerBatch
// series: wakeSeries worth, at least 1 and at most an eighth of the ring (so producers rarely
// find it full while the aggregator sleeps).
func WakeCount(ringCap, seriesPerBatch int) int {
	return min(max(1, wakeSeries/max(1, seriesPerBatch)), max(1, ringCap/8))
}

var _ pipeline.Consumer[series.Batch, *series.DeltaBuffer] = (*Aggregator)(nil)

// WakeItems is how many queued batches wake the aggregator: wakeSeries' worth at the size of
// the largest recent batches.
func (a *Aggregator) WakeItems() int { return a.wakeItems }

// Apply folds batch b into the active delta buffer and hands the span names it did not find
// templates for to the learner.
func (a *Aggregator) Apply(b *series.Batch, now int64) {
	a.apply(b)
	if a.clusters != nil {
		a.clusters.Learn(&b.Clusters, now)
	}
	a.spans += b.Spans
	a.late.Add(&b.Late)
}

// Applied ends a round: one atomic add for its spans however many batches and spans it held,
// the templates learned from them published once, and the wake count set from the batches'
// sizes.
func (a *Aggregator) Applied(_ int, now int64) {
	a.tel.AggregatedSpans.Add(a.spans)
	a.spans = 0
	a.tel.Late.Add(&a.late)
	a.late = latespans.Counts{}
	if a.clusters != nil {
		a.clusters.Publish() // what the learner learned, for the producers
	}
	a.wakeItems = WakeCount(a.ringCap, int(a.hints.Get(series.HintSeries)))
	a.tel.SeriesLive.Store(int64(a.liveSeries()))
}

func (a *Aggregator) liveSeries() int {
	n := 0
	for _, t := range a.tables {
		n += t.n
	}
	return n
}

// apply folds one batch into the active delta buffer.
func (a *Aggregator) apply(b *series.Batch) {
	// The plan's facts in locals: the loops below store through row pointers, after which
	// the compiler would load them again from the plan for every series.
	nb, exemplars, expoSize := a.NB, a.Exemplars, a.ExpoSize
	a.resIDs = a.resIDs[:0]
	for i := range b.Resources {
		a.resIDs = append(a.resIDs, a.res.idOf(b, &b.Resources[i], a.active))
	}
	a.rows = a.rows[:0]
	var overflowSpans [series.OverflowKinds]int64
	var relabeledSpans int64
	labels := a.limits.labels
	ahead := a.liveSeries() >= touchMinSeries
	for i := range b.Series {
		if ahead && i%touchAhead == 0 && len(b.Series)-i >= minTouch {
			a.touch ^= touchSeries(a.tables, b.Series[i:min(i+touchAhead, len(b.Series))])
		}
		s := &b.Series[i]
		t := a.tables[s.Fam]
		d := &a.active.Fams[s.Fam]
		rid := a.resIDs[s.Res]
		w := uint64(s.Count)
		if b.Weighted {
			w = max(w, uint64(b.SeriesW[i]))
		}
		id, overflow, h, relabeled := a.limits.seriesOf(t, d, rid, b.Bytes(s.Key), s.Hash, b.TS, w, a.epoch)
		overflowSpans[overflow] += int64(s.Count)
		if relabeled {
			relabeledSpans += int64(s.Count)
		}
		if a.demand != nil {
			switch {
			case overflow != series.NoOverflow:
				a.demand.refused(h, overflow)
			case t.meta[id].epoch != a.epoch:
				a.demand.admitted(h) // once per series and interval
			}
		}
		if labels != nil && overflow == series.NoOverflow && t.meta[id].epoch != a.epoch {
			labels.offer(&a.Layout, t.fam, t.key(id)) // once per series and interval
		}
		row := a.activeRow(t, d, id, b.TS)
		r := d.Rows.At(int(row))
		// activeRow has just read the series' record, so stamping it here costs no miss; a
		// stamp in the interval row would cost every row eight bytes, in both buffers.
		if m := &t.meta[id]; m.lastSeen < b.TS {
			m.lastSeen = b.TS
		}
		switch {
		case !b.Weighted:
			r.Count += s.Count
		case !t.fam.Duration:
			// With durations the observations below count the spans (applyWeightedObs).
			r.Count += sampling.Round(t.carry(id), b.SeriesW[i])
		}
		if t.fam.Duration {
			r.Sum += s.Sum
			if nb == 0 {
				e := d.Expo.At(int(row))
				e.Min = min(e.Min, s.Min)
				e.Max = max(e.Max, s.Max)
			}
		}
		// The limit overflow series has no exemplars, as in spanmetrics; a cap overflow
		// series keeps them: they are traces of what exploded. (Without service.name,
		// span.kind and status.code, the caps use the limit overflow series.)
		if s.ExN > 0 && (overflow == series.NoOverflow || overflow != series.LimitOverflow && a.HasCapOverflow()) {
			for _, e := range b.Exemplars[s.ExOff : s.ExOff+s.ExN] {
				series.OfferExemplar(&d.Exemplars, &r.ExOff, &r.ExN, exemplars, &e)
			}
		}
		a.rows = append(a.rows, row)
	}
	obs := b.Obs
	if b.Weighted {
		a.applyWeightedObs(b) // counts and buckets by weight
		obs = nil
	}
	for _, o := range obs {
		s := &b.Series[o.Series]
		d := &a.active.Fams[s.Fam]
		row := a.rows[o.Series]
		if nb > 0 {
			d.Observe(int(row), nb, int(o.Code))
			continue
		}
		e := d.Expo.At(int(row))
		if o.Code == series.ZeroCode {
			e.Zero++
		} else {
			e.Sketch.Add(&d.Slab, o.Code, 1, expoSize)
		}
	}
	for k := series.LimitOverflow; k < series.OverflowKinds; k++ {
		if overflowSpans[k] > 0 {
			a.tel.OverflowSpans[k].Add(overflowSpans[k])
		}
	}
	if relabeledSpans > 0 {
		a.tel.LabelOverflowSpans.Add(relabeledSpans)
	}
	if b.InvalidWeights > 0 {
		a.tel.InvalidWeights.Add(b.InvalidWeights)
	}
}

// applyWeightedObs folds the observations of a weighted batch into the active buffer: each
// span's weight, rounded with its series' carry, counts in the row and in the span's bucket.
// apply has resolved the rows (a.rows).
func (a *Aggregator) applyWeightedObs(b *series.Batch) {
	nb, expoSize := a.NB, a.ExpoSize
	for j, o := range b.Obs {
		s := &b.Series[o.Series]
		d := &a.active.Fams[s.Fam]
		row := a.rows[o.Series]
		r := d.Rows.At(int(row))
		k := sampling.Round(a.tables[s.Fam].carry(r.ID), b.ObsW[j])
		r.Count += k
		if nb > 0 {
			d.ObserveN(int(row), nb, int(o.Code), k)
			continue
		}
		e := d.Expo.At(int(row))
		if o.Code == series.ZeroCode {
			e.Zero += k
		} else {
			e.Sketch.Add(&d.Slab, o.Code, k, expoSize)
		}
	}
}

// activeRow returns the row of series id in the active delta buffer, adding it on the
// series' first span of the interval.
func (a *Aggregator) activeRow(t *seriesTable, d *series.DeltaFamily, id uint32, ts int64) int32 {
	m := &t.meta[id]
	if m.epoch == a.epoch {
		return m.row
	}
	m.epoch, m.row = a.epoch, d.NewRow(id, ts, a.BucketsOf(t.fam), a.ExpoOf(t.fam))
	return m.row
}

// Swap makes spare, the buffer the flusher handed back, the active one, and returns the
// filled one for the flusher, with the series and resources that expired.
func (a *Aggregator) Swap(spare *series.DeltaBuffer, final bool) *series.DeltaBuffer {
	a.reclaim(spare)
	full := a.active
	a.active = spare
	a.epoch++
	a.hints.Rotate()
	for f, t := range a.tables {
		if t.keys.wantsCompaction() {
			full.Fams[f].Moved = t.compactKeys(full.Fams[f].Moved)
		}
		full.Fams[f].Keys = t.keys.chunks
	}
	now := a.clock.Now().UnixNano()
	a.expire(now, full)
	// After a burst has expired, an index under 1/8 full gives its slots back; the check is
	// constant time, and the rebuild, linear in the live series, happens once per burst.
	for _, t := range a.tables {
		t.index.Fit()
	}
	if a.sel != nil && !final {
		a.sel.rerank(a.tables, a.res, a.epoch, now, full)
	}
	a.demand.publish(now, a.tel)
	if a.limits.labels != nil {
		a.limits.labels.publish(now, a.tel)
	}
	if a.sel != nil {
		a.tel.SelectionBytes.Store(int64(a.sel.bytes()))
	}
	if a.clusters != nil {
		a.clusters.Expire(now) // template_expiration
	}
	if a.IsDelta {
		a.res.startInterval()
	}
	full.TS = now
	a.tel.SeriesLive.Store(int64(a.liveSeries()))
	return full
}

// reclaim frees the ids expired at the previous swap: the flusher has now forgotten them.
func (a *Aggregator) reclaim(b *series.DeltaBuffer) {
	for f := range b.Fams {
		t := a.tables[f]
		t.free = append(t.free, b.Fams[f].Expired...)
		b.Fams[f].Expired = b.Fams[f].Expired[:0]
	}
	a.res.reclaim(b.ExpiredRes)
	b.ExpiredRes = b.ExpiredRes[:0]
}

// expire drops idle series and resources; full carries the list to the flusher, which
// exports them one last time (spanmetrics removes expired state after building metrics).
func (a *Aggregator) expire(now int64, full *series.DeltaBuffer) {
	dead := a.res.expiring(now, a.ResourceIdle, a.ResourceCacheSize)
	idle := a.SeriesIdle
	for f, t := range a.tables {
		if idle == 0 && len(dead) == 0 {
			break // nothing can expire: skip the O(series) scan that would hold up the drain
		}
		expired := full.Fams[f].Expired
		for id := range t.meta {
			m := &t.meta[id]
			if m.keyLen == 0 {
				continue
			}
			if !a.res.all[m.res].live || (idle > 0 && now-m.lastSeen >= idle) {
				a.limits.drop(t, uint32(id))
				expired = append(expired, uint32(id))
			}
		}
		full.Fams[f].Expired = expired
	}
	for _, rid := range dead {
		if svc, freed := a.res.release(rid); freed {
			if a.sel != nil {
				a.sel.forget(svc)
			}
			if a.limits.labels != nil {
				a.limits.labels.forget(svc)
			}
		}
		full.ExpiredRes = append(full.ExpiredRes, rid)
	}
}
