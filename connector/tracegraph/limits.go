package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import "sync/atomic"

// labelOverflowValue replaces a dimension's value that a limit refused: Tempo's value for its
// max_cardinality_per_label, and tracemetrics' (connector/tracemetrics), so that one query
// finds both.
const labelOverflowValue = "__cardinality_overflow__"

// seriesLimits bounds what the configured dimensions add to the edge series (the series
// without dimensions are bounded by the services and connection types themselves):
//
//   - max_cardinality_per_label: each client_<dim> label holds at most that many distinct
//     values per client service, each server_<dim> label per server service. A new series
//     whose value is beyond them is counted with that value replaced by labelOverflowValue;
//     client, server, connection_type, failed and the other dimensions stay. A value is held
//     while a series has it.
//   - max_series_per_edge: a client → server pair holds at most that many series; a new one
//     beyond them is counted in the pair's overflow series, whose every dimension is
//     labelOverflowValue (client, server, connection_type, failed and virtual_node stay, so
//     request and error rates per edge stay exact). Those overflow series do not count.
//
// Every request is recorded in one series either way, so totals per edge are exact. Owned by
// the aggregator goroutine with the series table; it sees a key only when the key has no
// series (record's lookup found none), so a known series pays nothing. It allocates only for
// a new pair, a new held value or a new service of a label (map entries).
type seriesLimits struct {
	maxPerEdge  int
	maxPerLabel int
	nDims       int    // len(plan.dims): keys hold 2 × nDims values, client's then server's
	overflowID  uint32 // the interned labelOverflowValue, kept through every sweep

	perEdge map[uint64]int32 // by client<<32 | server: series held, overflow series excepted
	// held is, by label (client dims, then server dims), the references to each value by
	// service<<32 | value id; distinct the count of held values by service.
	held     []map[uint64]uint32
	distinct []map[uint32]int32

	// Requests counted with a replaced value, by the limit that replaced it (the telemetry).
	labelRequests, edgeRequests *atomic.Int64
}

// newSeriesLimits returns the limits of p, with overflowID the interned labelOverflowValue,
// counting in tel; nil when no dimension is configured or both limits are off.
func newSeriesLimits(p *plan, overflowID uint32, tel *telemetry) *seriesLimits {
	if len(p.dims) == 0 || p.maxSeriesPerEdge <= 0 && p.maxCardinalityPerLabel <= 0 {
		return nil
	}
	l := &seriesLimits{maxPerEdge: p.maxSeriesPerEdge, maxPerLabel: p.maxCardinalityPerLabel, nDims: len(p.dims),
		overflowID: overflowID, perEdge: map[uint64]int32{},
		labelRequests: &tel.labelOverflowRequests, edgeRequests: &tel.edgeOverflowRequests}
	if l.maxPerLabel > 0 {
		for range 2 * l.nDims {
			l.held = append(l.held, map[uint64]uint32{})
			l.distinct = append(l.distinct, map[uint32]int32{})
		}
	}
	return l
}

// admit rewrites k, the key of a request whose series does not exist, where a limit refuses
// it a series of its own; exists reports whether a key has a series.
func (l *seriesLimits) admit(k []uint32, exists func([]uint32) bool) {
	dims := k[keyDims:]
	if l.maxPerLabel > 0 {
		replaced := false
		for i, v := range dims {
			if v == noValue || v == l.overflowID {
				continue
			}
			svc := l.serviceOf(k, i)
			if l.held[i][uint64(svc)<<32|uint64(v)] > 0 || int(l.distinct[i][svc]) < l.maxPerLabel {
				continue
			}
			dims[i], replaced = l.overflowID, true
		}
		if replaced {
			l.labelRequests.Add(1)
			if exists(k) {
				return
			}
		}
	}
	if l.maxPerEdge > 0 && !l.isOverflow(k) && int(l.perEdge[edgeOf(k)]) >= l.maxPerEdge {
		for i := range dims {
			dims[i] = l.overflowID
		}
		l.edgeRequests.Add(1)
	}
}

// created takes k's references: a series with key k was created.
func (l *seriesLimits) created(k []uint32) { l.adjust(k, 1) }

// removed gives back k's references: the series with key k was removed.
func (l *seriesLimits) removed(k []uint32) { l.adjust(k, -1) }

func (l *seriesLimits) adjust(k []uint32, by int32) {
	if l.isOverflow(k) {
		return
	}
	if e := edgeOf(k); by > 0 {
		l.perEdge[e]++
	} else if l.perEdge[e]--; l.perEdge[e] <= 0 {
		delete(l.perEdge, e)
	}
	if l.maxPerLabel == 0 {
		return
	}
	for i, v := range k[keyDims:] {
		if v == noValue || v == l.overflowID {
			continue
		}
		svc := l.serviceOf(k, i)
		hv := uint64(svc)<<32 | uint64(v)
		switch refs := l.held[i][hv]; {
		case by > 0 && refs == 0:
			l.held[i][hv] = 1
			l.distinct[i][svc]++
		case by > 0:
			l.held[i][hv] = refs + 1
		case refs > 1:
			l.held[i][hv] = refs - 1
		case refs == 1:
			delete(l.held[i], hv)
			if l.distinct[i][svc]--; l.distinct[i][svc] <= 0 {
				delete(l.distinct[i], svc)
			}
		}
	}
}

// serviceOf is the service whose values label i of key k counts against: the client's for a
// client_<dim>, the server's for a server_<dim>.
func (l *seriesLimits) serviceOf(k []uint32, i int) uint32 {
	if i < l.nDims {
		return k[keyClient]
	}
	return k[keyServer]
}

// isOverflow reports whether k is an edge's overflow series: every dimension replaced.
func (l *seriesLimits) isOverflow(k []uint32) bool {
	for _, v := range k[keyDims:] {
		if v != l.overflowID {
			return false
		}
	}
	return true
}

func edgeOf(k []uint32) uint64 { return uint64(k[keyClient])<<32 | uint64(k[keyServer]) }
