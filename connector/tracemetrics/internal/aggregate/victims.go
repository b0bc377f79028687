package aggregate // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/aggregate"

import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

// victims lists the idle series of a family, the longest idle first: the series a refused
// series that keeps coming may replace while an interval fills (selection.go). An idle series
// received no span in this interval so far, and at most one in the last whole interval; a
// candidate replaces one only if it received none since the candidate's chain began either, so
// the candidate's spans (at least minPromote) are more than twice the idle series' (at most
// one) over about the same time: the re-ranking's rule, applied at once instead of at the next
// flush. A series that received two spans or more in the last interval is never taken at
// once: over the few spans of a new chain, a series that is busy but between two spans would
// look idle; the re-ranking weighs it with a whole interval's count.
//
// The last interval's counts are in the buffer the swap hands to the flusher, readable only
// during the swap: so the lists are built at each swap where a family has refused series
// (rerank), and otherwise when a refused series first needs a place in an interval, without
// those counts (then a series that received any span in the last interval is left out: right
// after a burst of IDs, all of them). Built at the swap, the IDs of a burst that has just
// ended are victims at once for the operations that arrive behind it.
//
// Either way it is built at most once per interval: one pass
// over the family's series, a counting sort by age (in flush intervals, 64 buckets, so that
// the series idle the longest go first: after a burst of IDs, the first IDs before the last
// ones) and by service. Two lists of ids, 8 bytes per idle series: by service for
// max_series_per_service, whose victim must be of the refused series' service, and all
// together for max_series. A series taken from one list is still in the other; popping
// checks again that a series is idle and held, so it is skipped there.
type victims struct {
	epoch  uint32   // the aggregator epoch the lists were built in; 0: never
	all    []uint32 // ids, the longest idle first
	allCur int
	bySvc  []uint32 // ids by service, the longest idle first within each
	svcOff []int32  // by service id: the start of its ids in bySvc; one more entry at the end
	svcCur []int32  // by service id: the next of its ids to look at
	counts []int32  // build's scratch
}

// ageBuckets is the resolution of the order: idle for 0, 1, ..., 63 or more flush intervals.
const ageBuckets = 64

// victimTries bounds the series a pop looks at that are idle, but not since the candidate's
// chain began: the lists are ordered by age only to the interval, so a few are looked at
// before giving up.
const victimTries = 8

// builtIn reports whether the lists were built in epoch.
func (v *victims) builtIn(epoch uint32) bool { return v.epoch == epoch }

// build lists the idle series of t as of epoch and now (interval ns a flush interval); skip
// has the bits of the series never to take (overflow series, series promoted since the last
// re-ranking); last, when not nil, is the rows of the interval that ended (epoch-1), by which
// a series that received one span in it is idle too.
func (v *victims) build(t *seriesTable, res *resourceTable, epoch uint32, now, interval int64, skip []uint64, last *series.Chunked[series.DeltaRow]) {
	v.epoch = epoch
	services := len(res.svcRefs)
	bucketOf := func(m *seriesMeta) int {
		age := (now - m.lastSeen) / max(interval, 1)
		return ageBuckets - 1 - int(min(max(age, 0), ageBuckets-1)) // the oldest first
	}
	idle := func(id int) (*seriesMeta, bool) {
		m := &t.meta[id]
		if m.keyLen == 0 || m.epoch == demotedEpoch || m.epoch == epoch ||
			id/64 < len(skip) && skip[id/64]&(1<<(id%64)) != 0 {
			return nil, false
		}
		if m.epoch == epoch-1 && (last == nil || last.At(int(m.row)).Count > 1) {
			return nil, false
		}
		return m, true
	}
	// Counting sort by (service, age), then by age alone.
	keys := services * ageBuckets
	v.counts = growInt32(v.counts, keys+1)
	clear(v.counts)
	n := 0
	for id := range t.meta {
		if m, ok := idle(id); ok {
			v.counts[int(res.all[m.res].svc)*ageBuckets+bucketOf(m)+1]++
			n++
		}
	}
	for k := 1; k <= keys; k++ {
		v.counts[k] += v.counts[k-1]
	}
	v.bySvc = growUint32(v.bySvc, n)
	v.svcOff = growInt32(v.svcOff, services+1)
	v.svcCur = growInt32(v.svcCur, services)
	for svc := range services {
		v.svcOff[svc] = v.counts[svc*ageBuckets]
		v.svcCur[svc] = v.svcOff[svc]
	}
	v.svcOff[services] = int32(n)
	for id := range t.meta {
		if m, ok := idle(id); ok {
			k := int(res.all[m.res].svc)*ageBuckets + bucketOf(m)
			v.bySvc[v.counts[k]] = uint32(id)
			v.counts[k]++
		}
	}
	v.counts = growInt32(v.counts, ageBuckets+1)
	clear(v.counts)
	for _, id := range v.bySvc {
		v.counts[bucketOf(&t.meta[id])+1]++
	}
	for k := 1; k <= ageBuckets; k++ {
		v.counts[k] += v.counts[k-1]
	}
	v.all = growUint32(v.all, n)
	for _, id := range v.bySvc {
		k := bucketOf(&t.meta[id])
		v.all[v.counts[k]] = id
		v.counts[k]++
	}
	v.allCur = 0
}

// pop returns an idle series of service svc (any service when global) of t that received no
// span since before (the candidate's chain began) nor in epoch, the longest idle first.
func (v *victims) pop(t *seriesTable, res *resourceTable, svc uint32, global bool, before int64, epoch uint32) (uint32, bool) {
	if global {
		id, ok, cur := v.scan(t, res, v.all, v.allCur, len(v.all), svc, global, before, epoch)
		v.allCur = cur
		return id, ok
	}
	if int(svc) >= len(v.svcCur) {
		return 0, false // a service that came after the lists were built
	}
	id, ok, cur := v.scan(t, res, v.bySvc, int(v.svcCur[svc]), int(v.svcOff[svc+1]), svc, global, before, epoch)
	v.svcCur[svc] = int32(cur)
	return id, ok
}

// scan is pop over list[cur:end]; it returns the new cursor: the series before it are taken
// or no longer idle, never victims again this interval.
func (v *victims) scan(t *seriesTable, res *resourceTable, list []uint32, cur, end int, svc uint32, global bool, before int64, epoch uint32) (uint32, bool, int) {
	tries := 0
	for j := cur; j < end; j++ {
		id := list[j]
		m := &t.meta[id]
		switch {
		case m.keyLen == 0 || m.epoch == demotedEpoch || m.epoch == epoch || !global && res.all[m.res].svc != svc:
			if j == cur {
				cur++ // taken, demoted or busy since the lists were built
			}
		case m.lastSeen >= before:
			// Idle, but not since the candidate began coming; the series after it are idle
			// for about as long or less (the order is by interval). It stays for a candidate
			// that has been coming longer.
			if tries++; tries == victimTries {
				return 0, false, cur
			}
		default:
			if j == cur {
				cur++
			} else {
				list[j] = list[cur] // keep the skipped head in the part still to look at
				list[cur] = id
				cur++
			}
			return id, true, cur
		}
	}
	return 0, false, cur
}

// bytes is the memory the lists hold.
func (v *victims) bytes() int {
	return 4 * (cap(v.all) + cap(v.bySvc) + cap(v.svcOff) + cap(v.svcCur) + cap(v.counts))
}

func growInt32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

func growUint32(s []uint32, n int) []uint32 {
	if cap(s) < n {
		return make([]uint32, n)
	}
	return s[:n]
}
