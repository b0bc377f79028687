package aggregate // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/aggregate"

import (
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/telemetry"
)

// limits finds or creates the series of a span under the limits: aggregation_cardinality_limit
// (spanmetrics'), max_series and max_series_per_service (ours, the caps). Owned by the
// aggregator goroutine, with the resources it counts in.
//
// aggregation_cardinality_limit is checked first, with spanmetrics' overflow series.
// max_series and max_series_per_service keep in their overflow series the service name, span
// kind and status code of the refused series, so that calls and errors per service and kind
// stay exact while a service explodes. Neither limit ever takes a series that exists: a
// refused series goes to overflow, the series of other services are untouched.
//
// With cap_selection by traffic (selection.go) the caps keep slots for the series promoted at
// the last flush, count the spans they refuse, and a demoted series is refused like a new one.
type limits struct {
	*series.Plan
	res    *resourceTable
	sel    *selector    // nil by arrival or without caps
	labels *labelLimits // max_cardinality_per_label; nil when off
	tel    *telemetry.Telemetry
	ovKey  []byte // the key of a cap overflow series being made (appendCapOverflowKey)
}

// seriesOf returns the series with key in resource rid of table t, whose identity hashes to h,
// creating it; or, when a limit refuses a new series, the resource's overflow series and that
// limit. w is the weight of the series' spans in the batch, applied at ts; epoch the active
// buffer's; d the active buffer's part of t's family, where new series are announced. It also
// returns the hash of the series' identity, and whether max_cardinality_per_label replaced
// a value of key (the series is then that of the key with the overflow value).
func (l *limits) seriesOf(t *seriesTable, d *series.DeltaFamily, rid uint32, key []byte, h uint64, ts int64, w uint64, epoch uint32) (uint32, series.Overflow, uint64, bool) {
	r := &l.res.all[rid]
	f := t.fam.Index
	id, found := t.find(h, rid, series.Identity(key, t.fam))
	relabeled := false
	if !found && l.labels != nil {
		// A new identity: a label may be full. Its series is that of the overflow value.
		if k, ok := l.labels.relabel(&l.Layout, t.fam, r.svc, key, ts); ok {
			key, relabeled = k, true
			h = t.keyHash(series.Identity(key, t.fam))
			id, found = t.find(h, rid, series.Identity(key, t.fam))
		}
	}
	if found {
		if t.meta[id].epoch == demotedEpoch {
			k, promoted := l.capRefuses(t, d, r, h, w, ts, epoch)
			if k != series.NoOverflow {
				return l.capOverflowSeries(t, d, rid, key, ts), k, h, relabeled
			}
			l.restore(t, r, id, epoch)
			if l.sel != nil {
				l.sel.created(int(f), h, id, promoted)
			}
		}
		if l.IsDelta && l.CardLimit > 0 && t.meta[id].epoch != epoch {
			// spanmetrics' delta state starts empty each interval, so its cardinality limit
			// counts the series seen in this interval.
			if r.touched[f] >= l.CardLimit {
				return l.overflowSeries(t, d, rid, ts), series.LimitOverflow, h, relabeled
			}
			r.touched[f]++
		}
		return id, series.NoOverflow, h, relabeled
	}
	switch {
	case l.CardLimit > 0 && !l.IsDelta && r.series[f] >= l.CardLimit,
		l.CardLimit > 0 && l.IsDelta && r.touched[f] >= l.CardLimit:
		return l.overflowSeries(t, d, rid, ts), series.LimitOverflow, h, relabeled
	}
	k, promoted := l.capRefuses(t, d, r, h, w, ts, epoch)
	if k != series.NoOverflow {
		return l.capOverflowSeries(t, d, rid, key, ts), k, h, relabeled
	}
	id = t.insert(key, h, rid, ts)
	r.series[f]++
	r.touched[f]++
	l.res.svcSeries[f][r.svc]++
	announce(d, id, &t.meta[id], ts)
	if l.sel != nil {
		l.sel.created(int(f), h, id, promoted)
	}
	if l.labels != nil {
		l.labels.hold(&l.Layout, t.fam, r.svc, key)
	}
	return id, series.NoOverflow, h, relabeled
}

// capRefuses returns the cap that refuses a series of resource r in table t a slot, or
// noOverflow, and whether the series was promoted to take one. max_series_per_service is
// checked first: raising max_series would not let the series in. Slots reserved for promoted
// series count as taken, except for the series they are reserved for. A refused series' w
// spans at ts are counted for the selection; when they make it busier than an idle series of
// the full scope, that series gives up its place (expired and listed in d, or demoted) and
// the refused one takes it.
func (l *limits) capRefuses(t *seriesTable, d *series.DeltaFamily, r *resource, h, w uint64, ts int64, epoch uint32) (series.Overflow, bool) {
	f := int(t.fam.Index)
	k := l.capFull(t, r.svc)
	if k == series.NoOverflow || l.sel == nil {
		return k, false
	}
	if by, ok := l.sel.claim(f, r.svc, h); ok {
		if k = l.capFull(t, r.svc); k == series.NoOverflow {
			l.tel.PromotedSeries[by].Add(1)
			return series.NoOverflow, true
		}
	}
	e := l.sel.count(f, r.svc, h, w, ts, k)
	if e == nil {
		return k, false
	}
	if id, ok := l.sel.victim(f, t, l.res, r.svc, k, e, epoch, ts); ok {
		l.sel.giveUp(l.res, f, t, d, id)
		l.tel.DemotedSeries[k].Add(1)
		if k2 := l.capFull(t, r.svc); k2 == series.NoOverflow {
			l.tel.PromotedSeries[k].Add(1)
			return series.NoOverflow, true
		}
	}
	return k, false
}

func (l *limits) capFull(t *seriesTable, svc uint32) series.Overflow {
	f := int(t.fam.Index)
	svcReserved, reserved := l.sel.reservedFor(f, svc)
	switch {
	case l.MaxService > 0 && l.res.svcSeries[f][svc]+svcReserved >= l.MaxService:
		return series.ServiceOverflow
	case l.MaxSeries > 0 && t.n+reserved >= l.MaxSeries:
		return series.GlobalOverflow
	}
	return series.NoOverflow
}

// restore counts a demoted series against the caps again: it was promoted, or a cap has room.
func (l *limits) restore(t *seriesTable, r *resource, id, epoch uint32) {
	t.meta[id].epoch = epoch - 1 // not the active epoch: its next span adds a row
	t.n++
	l.res.svcSeries[t.fam.Index][r.svc]++
	if l.sel != nil {
		l.sel.demoted[t.fam.Index]--
	}
}

// evict expires series id of t at once, listing it in d (the part of a buffer not yet sent to
// the flusher) so that the flusher exports it one last time and forgets it with that buffer,
// as it does series that expire at a swap; the id is reused once the buffer comes back.
func (l *limits) evict(t *seriesTable, d *series.DeltaFamily, id uint32) {
	l.drop(t, id)
	d.Expired = append(d.Expired, id)
}

// announce tells the flusher, through the active buffer, of series id, new.
func announce(d *series.DeltaFamily, id uint32, m *seriesMeta, ts int64) {
	d.NewSeries = append(d.NewSeries, series.AnnouncedSeries{ID: id, Res: m.res, KeyLen: m.keyLen, Created: ts, KeyRef: m.keyRef})
}

// overflowSeries returns the resource's otel.metric.overflow=true series of the family. It is
// not in the hash index (the resource points at it) and counts against no limit.
func (l *limits) overflowSeries(t *seriesTable, d *series.DeltaFamily, rid uint32, ts int64) uint32 {
	r := &l.res.all[rid]
	f := t.fam.Index
	if r.overflow[f] != 0 {
		return r.overflow[f] - 1
	}
	var kb [series.KeyHeaderLen]byte
	id := t.insertOverflow(series.AppendOverflowKey(kb[:0], r.hash, f), rid, ts)
	r.overflow[f] = id + 1
	announce(d, id, &t.meta[id], ts)
	return id
}

// capOverflowSeries returns the max_series/max_series_per_service overflow series of resource
// rid, family t, that has the service name, span kind and status code of the series whose key
// is key. Like the limit overflow series it is not in the hash index and counts against no
// limit: a resource has at most capOverflowSlots of them per family. With service.name,
// span.kind and status.code all excluded it is the limit overflow series (hasCapOverflow).
func (l *limits) capOverflowSeries(t *seriesTable, d *series.DeltaFamily, rid uint32, key []byte, ts int64) uint32 {
	if !l.HasCapOverflow() {
		return l.overflowSeries(t, d, rid, ts)
	}
	slot := &l.res.all[rid].capOverflow[t.fam.Index][l.SeriesOverflowSlot(key)]
	if *slot != 0 {
		return *slot - 1
	}
	l.ovKey = l.AppendCapOverflowKey(l.ovKey[:0], key)
	id := t.insertOverflow(l.ovKey, rid, ts)
	*slot = id + 1
	announce(d, id, &t.meta[id], ts)
	return id
}

// drop removes series id, expired, from t and from what the limits count.
func (l *limits) drop(t *seriesTable, id uint32) {
	f := t.fam.Index
	r := &l.res.all[t.meta[id].res]
	switch key := t.key(id); {
	case series.IsOverflowKey(key) && series.IsCapOverflowKey(key):
		r.capOverflow[f][l.CapOverflowSlot(key)] = 0
	case series.IsOverflowKey(key):
		r.overflow[f] = 0
	default:
		r.series[f]--
		if l.labels != nil {
			l.labels.release(&l.Layout, t.fam, r.svc, key)
		}
		if t.meta[id].epoch != demotedEpoch { // a demoted series left the caps' counts already
			l.res.svcSeries[f][r.svc]--
			t.n--
		} else if l.sel != nil {
			l.sel.demoted[f]--
		}
	}
	t.remove(id)
}
