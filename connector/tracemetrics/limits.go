package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

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
	*plan
	res   *resourceTable
	sel   *selector // nil by arrival or without caps
	tel   *telemetry
	ovKey []byte // the key of a cap overflow series being made (appendCapOverflowKey)
}

// resolve returns the series with key in resource rid of table t, whose identity hashes to h,
// creating it; or, when a limit refuses a new series, the resource's overflow series and that
// limit. w is the weight of the series' spans in the batch; epoch the active buffer's; d the
// active buffer's part of t's family, where new series are announced.
func (l *limits) resolve(t *seriesTable, d *deltaFamily, rid uint32, key []byte, h uint64, ts int64, w uint64, epoch uint32) (uint32, overflowKind) {
	r := &l.res.all[rid]
	f := t.fam.index
	if id, ok := t.find(h, rid, identity(key, t.fam)); ok {
		if t.meta[id].epoch == demotedEpoch {
			if k := l.capRefuses(t, r, h, w); k != noOverflow {
				return l.capOverflowSeries(t, d, rid, key, ts), k
			}
			l.restore(t, r, id, epoch)
		}
		if l.isDelta && l.cardLimit > 0 && t.meta[id].epoch != epoch {
			// spanmetrics' delta state starts empty each interval, so its cardinality limit
			// counts the series seen in this interval.
			if r.touched[f] >= l.cardLimit {
				return l.overflowSeries(t, d, rid, ts), limitOverflow
			}
			r.touched[f]++
		}
		return id, noOverflow
	}
	switch {
	case l.cardLimit > 0 && !l.isDelta && r.series[f] >= l.cardLimit,
		l.cardLimit > 0 && l.isDelta && r.touched[f] >= l.cardLimit:
		return l.overflowSeries(t, d, rid, ts), limitOverflow
	}
	if k := l.capRefuses(t, r, h, w); k != noOverflow {
		return l.capOverflowSeries(t, d, rid, key, ts), k
	}
	id := t.insert(key, h, rid, ts)
	r.series[f]++
	r.touched[f]++
	l.res.svcSeries[f][r.svc]++
	announce(d, id, &t.meta[id], ts)
	return id, noOverflow
}

// capRefuses returns the cap that refuses a series of resource r in table t a slot, or
// noOverflow. max_series_per_service is checked first: raising max_series would not let the
// series in. Slots reserved for promoted series count as taken, except for the series they
// are reserved for; a refused series' w spans are counted for the next re-ranking.
func (l *limits) capRefuses(t *seriesTable, r *resource, h, w uint64) overflowKind {
	f := int(t.fam.index)
	k := l.capFull(t, r.svc)
	if k == noOverflow || l.sel == nil {
		return k
	}
	if by, ok := l.sel.claim(f, r.svc, h); ok {
		if k = l.capFull(t, r.svc); k == noOverflow {
			l.tel.promotedSeries[by].Add(1)
			return noOverflow
		}
	}
	l.sel.count(f, r.svc, h, w, k)
	return k
}

func (l *limits) capFull(t *seriesTable, svc uint32) overflowKind {
	f := int(t.fam.index)
	svcReserved, reserved := l.sel.reservedFor(f, svc)
	switch {
	case l.maxService > 0 && l.res.svcSeries[f][svc]+svcReserved >= l.maxService:
		return serviceOverflow
	case l.maxSeries > 0 && t.n+reserved >= l.maxSeries:
		return globalOverflow
	}
	return noOverflow
}

// restore counts a demoted series against the caps again: it was promoted, or a cap has room.
func (l *limits) restore(t *seriesTable, r *resource, id, epoch uint32) {
	t.meta[id].epoch = epoch - 1 // not the active epoch: its next span adds a row
	t.n++
	l.res.svcSeries[t.fam.index][r.svc]++
}

// announce tells the flusher, through the active buffer, of series id, new.
func announce(d *deltaFamily, id uint32, m *seriesMeta, ts int64) {
	d.newSeries = append(d.newSeries, newSeries{id: id, res: m.res, keyLen: m.keyLen, created: ts, keyRef: m.keyRef})
}

// overflowSeries returns the resource's otel.metric.overflow=true series of the family. It is
// not in the hash index (the resource points at it) and counts against no limit.
func (l *limits) overflowSeries(t *seriesTable, d *deltaFamily, rid uint32, ts int64) uint32 {
	r := &l.res.all[rid]
	f := t.fam.index
	if r.overflow[f] != 0 {
		return r.overflow[f] - 1
	}
	var kb [keyHeaderLen]byte
	id := t.insertOverflow(appendOverflowKey(kb[:0], r.hash, f), rid, ts)
	r.overflow[f] = id + 1
	announce(d, id, &t.meta[id], ts)
	return id
}

// capOverflowSeries returns the max_series/max_series_per_service overflow series of resource
// rid, family t, that has the service name, span kind and status code of the series whose key
// is key. Like the limit overflow series it is not in the hash index and counts against no
// limit: a resource has at most capOverflowSlots of them per family. With service.name,
// span.kind and status.code all excluded it is the limit overflow series (hasCapOverflow).
func (l *limits) capOverflowSeries(t *seriesTable, d *deltaFamily, rid uint32, key []byte, ts int64) uint32 {
	if !l.hasCapOverflow() {
		return l.overflowSeries(t, d, rid, ts)
	}
	slot := &l.res.all[rid].capOverflow[t.fam.index][l.seriesOverflowSlot(key)]
	if *slot != 0 {
		return *slot - 1
	}
	l.ovKey = l.appendCapOverflowKey(l.ovKey[:0], key)
	id := t.insertOverflow(l.ovKey, rid, ts)
	*slot = id + 1
	announce(d, id, &t.meta[id], ts)
	return id
}

// drop removes series id, expired, from t and from what the limits count.
func (l *limits) drop(t *seriesTable, id uint32) {
	f := t.fam.index
	r := &l.res.all[t.meta[id].res]
	switch key := t.key(id); {
	case isOverflowKey(key) && isCapOverflowKey(key):
		r.capOverflow[f][l.capOverflowSlot(key)] = 0
	case isOverflowKey(key):
		r.overflow[f] = 0
	default:
		r.series[f]--
		if t.meta[id].epoch != demotedEpoch { // a demoted series left the caps' counts already
			l.res.svcSeries[f][r.svc]--
			t.n--
		}
	}
	t.remove(id)
}
