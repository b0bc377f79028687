package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"math"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-red/otelcol-red/internal/intake"
	"github.com/otelcol-red/otelcol-red/internal/latespans"
	"github.com/otelcol-red/otelcol-red/internal/pipeline"
)

// aggregator is the pipeline's consumer (internal/pipeline): the one goroutine that owns the
// pair table, the series table and the interned strings, so none of them needs a lock. It
// applies the batches the stage drains, pairing halves into edges and recording complete edges;
// its duties expire waiting halves on store_expiration_loop and idle series on cache_loop; at
// each flush tick it copies the series into a snapshot, which the flusher builds the metrics
// from on its own goroutine.
type aggregator struct {
	p      *plan
	clock  clockwork.Clock
	tel    *telemetry
	hints  *intake.SizeHints // the producers' batch sizes, forgotten interval by interval
	pairs  *pairTable
	series *seriesTable
	ids    *stringIDs

	// wakeItems is how many queued batches wake the aggregator; the flush ticker covers quiet
	// periods.
	wakeItems int
	// scratch is a new edge being assembled before it is known whether it waits.
	scratch     edge
	scratchDims []uint32
	// userID and unknownID are the interned names of servicegraph's virtual nodes;
	// overflowID the value a dimension limit writes (limits.go).
	userID, unknownID, overflowID uint32
	// start is when the interval being filled began: Start, then each delta flush.
	start pcommon.Timestamp
	// spans counts the spans of the round being applied.
	spans int
}

var (
	_ pipeline.Consumer[halfBatch, *snapshot] = (*aggregator)(nil)
	_ pipeline.Starter                        = (*aggregator)(nil)
)

func newAggregator(p *plan, clock clockwork.Clock, tel *telemetry, hints *intake.SizeHints, ringCap int) *aggregator {
	a := &aggregator{
		p: p, clock: clock, tel: tel, hints: hints,
		pairs:       newPairTable(len(p.dims)),
		series:      newSeriesTable(p),
		ids:         newStringIDs(),
		wakeItems:   max(1, min(16, ringCap/8)),
		scratchDims: make([]uint32, 2*len(p.dims)),
	}
	if p.flushInterval <= 0 {
		a.wakeItems = 1 // flush after each batch, as servicegraph after each ConsumeTraces
	}
	a.userID, a.unknownID = a.ids.idString("user"), a.ids.idString("unknown")
	a.overflowID = a.ids.idString(labelOverflowValue)
	a.series.limits = newSeriesLimits(p, a.overflowID, tel)
	return a
}

// Start begins the first interval.
func (a *aggregator) Start(now int64) { a.start = pcommon.Timestamp(now) }

// WakeItems is how many queued batches wake the aggregator.
func (a *aggregator) WakeItems() int { return a.wakeItems }

// Apply merges every half of b into its edge.
func (a *aggregator) Apply(b *halfBatch, now int64) {
	for j := range b.halves {
		a.apply(b, &b.halves[j], now)
	}
	a.spans += b.spans
	a.tel.late.Add(&b.late)
	a.tel.invalidWeights.Add(int64(b.invalidWeights))
	a.tel.noService.Add(int64(b.noService))
	a.tel.backwards.Add(int64(b.backwards))
}

// Applied publishes a round's counts: one atomic add per round for the spans.
func (a *aggregator) Applied(int, int64) {
	a.tel.receivedSpans.Add(int64(a.spans))
	a.spans = 0
	a.tel.pending.Store(int64(a.pairs.n))
	a.tel.series.Store(int64(a.series.live))
}

// Swap copies the series into spare for the flusher (a service graph has few series: edges
// between services, not spans) and, with delta temporality, starts the next interval. The
// final one first expires every waiting edge: its pair can no longer arrive, the state is lost
// with the process, so it counts as it would have at its ttl.
func (a *aggregator) Swap(spare *snapshot, final bool) *snapshot {
	now := a.clock.Now()
	if final {
		a.expireBefore(math.MaxInt64, now.UnixNano())
	}
	ts := pcommon.NewTimestampFromTime(now.Add(-a.p.tsOffset))
	spare.take(a.series, a.ids, a.start, ts)
	a.series.forgetExemplars()
	if a.p.delta {
		a.start = ts
		a.series.restart()
		a.tel.series.Store(int64(a.series.live))
	}
	a.hints.Rotate()
	return spare
}

// apply merges half h into the edge it belongs to, servicegraph's UpsertEdge: an edge is
// recorded once, when its second half arrives (or its only one, for a database), whether the
// halves came in one batch or in batches flushes apart. Through span links (applyLinked) a
// message's PRODUCER span is paired with each CONSUMER span that links to it.
func (a *aggregator) apply(b *halfBatch, h *half, now int64) {
	hh := a.pairs.hashOf(h.trace, h.span)
	if h.linked {
		a.applyLinked(b, h, hh, now)
		return
	}
	linked := h.side == clientSide && a.pairs.linked > 0 && a.pairWaitingLinks(b, h, hh, now)
	id := a.pairs.find(hh, h.trace, h.span, false)
	if id >= 0 && a.pairs.edges[id].kept {
		// The client span of a message already paired through a link: a server half pairs with
		// it as a linked consumer does; a second copy of the client span adds nothing.
		if h.side == serverSide {
			a.pairKept(id, b, h, now)
		}
		return
	}
	var e *edge
	var dims []uint32
	if id >= 0 {
		e, dims = &a.pairs.edges[id], a.pairs.dimsOf(id)
	} else {
		e, dims = a.fresh(h, hh)
	}
	a.merge(e, dims, b, h)
	if e.complete() {
		a.record(e, dims, now)
		if id >= 0 {
			a.pairs.remove(id)
			if linked {
				// Other consumers of the message may still link to its client span.
				e, dims = a.fresh(h, hh)
				a.merge(e, dims, b, h)
				e.kept = true
				a.wait(e, dims, now)
			}
		} else {
			a.tel.totalEdges.Add(1)
		}
		return
	}
	if id >= 0 {
		a.pairs.edges[id].kept = a.pairs.edges[id].kept || linked
		return
	}
	a.tel.totalEdges.Add(1)
	e.kept = linked
	a.wait(e, dims, now)
}

// fresh returns the scratch edge, empty, for the key of h.
func (a *aggregator) fresh(h *half, hh uint64) (*edge, []uint32) {
	a.scratch = edge{trace: h.trace, span: h.span, hash: hh, peer: noValue}
	for i := range a.scratchDims {
		a.scratchDims[i] = noValue
	}
	return &a.scratch, a.scratchDims
}

// wait stores e as the newest waiting edge, for the ttl.
func (a *aggregator) wait(e *edge, dims []uint32, now int64) {
	if a.pairs.n >= a.p.maxItems {
		// Full: the oldest waiting half is the likeliest never to be paired; it goes the way
		// of an expired one (servicegraph drops the new half instead).
		a.tel.evictedEdges.Add(1)
		a.expireEdge(a.pairs.oldest, now)
	}
	e.expires = now + int64(a.p.ttl)
	a.pairs.insert(e, dims)
}

// applyLinked pairs h, a CONSUMER span's half keyed by one of its links, with the waiting
// client half of the linked span, which stays (kept) for the message's other consumers; without
// one, h waits beside the other consumers' halves waiting for it. A message read by several
// consumers is one edge each, whatever the order the spans arrive in.
func (a *aggregator) applyLinked(b *halfBatch, h *half, hh uint64, now int64) {
	if id := a.pairs.find(hh, h.trace, h.span, false); id >= 0 && a.pairs.edges[id].client != 0 {
		a.pairKept(id, b, h, now)
		return
	}
	e, dims := a.fresh(h, hh)
	e.linked = true
	a.merge(e, dims, b, h)
	a.tel.totalEdges.Add(1)
	a.wait(e, dims, now)
}

// pairKept records the edge of waiting client half id and server half h, and keeps the client
// half waiting (kept: its expiry records nothing) for the message's other consumers.
func (a *aggregator) pairKept(id int32, b *halfBatch, h *half, now int64) {
	client := &a.pairs.edges[id]
	client.kept = true
	a.scratch = *client
	copy(a.scratchDims, a.pairs.dimsOf(id))
	a.merge(&a.scratch, a.scratchDims, b, h)
	a.record(&a.scratch, a.scratchDims, now)
	a.tel.totalEdges.Add(1)
}

// pairWaitingLinks records an edge for each linked consumer's half waiting for client half h,
// and reports whether there was any. A database call is not a message.
func (a *aggregator) pairWaitingLinks(b *halfBatch, h *half, hh uint64, now int64) bool {
	if h.db.n != absent {
		return false
	}
	paired := false
	for id := a.pairs.find(hh, h.trace, h.span, true); id >= 0; id = a.pairs.find(hh, h.trace, h.span, true) {
		e, dims := &a.pairs.edges[id], a.pairs.dimsOf(id)
		a.merge(e, dims, b, h)
		a.record(e, dims, now)
		a.pairs.remove(id)
		paired = true
	}
	return paired
}

// record counts one request of e, unless late_spans drops it: an edge with a late half is
// counted as now, left out (counted in late_edges), or counted in its late="true" series.
func (a *aggregator) record(e *edge, dims []uint32, now int64) {
	if e.late {
		a.tel.lateEdges.Add(1)
		if a.p.late.Mode == latespans.Drop {
			return
		}
	}
	a.series.record(e, dims, now)
}

// merge writes half h into e, as servicegraph's update callbacks do.
func (a *aggregator) merge(e *edge, dims []uint32, b *halfBatch, h *half) {
	svc := a.ids.of(b, h.service)
	e.failed = e.failed || h.failed
	e.late = e.late || h.late
	e.weight = max(e.weight, h.weight)
	// database > messaging > unknown, whichever half came first (servicegraph: the last one).
	e.conn = max(e.conn, h.conn)
	at := 0
	if h.side == serverSide {
		at = len(a.p.dims)
	}
	for i := range a.p.dims {
		if v := a.ids.of(b, b.dims[int(h.dims)+i]); v != noValue {
			dims[at+i] = v
		}
	}
	if h.side == serverSide {
		e.server, e.serverLatency = svc, h.latency
		e.serverTrace, e.serverSpan, e.serverStart = h.ownTrace, h.own, h.start
		e.serverStored = a.p.stored(h.failed, h.start, h.end)
		return
	}
	e.client, e.clientLatency, e.clientEnd = svc, h.latency, h.end
	e.clientStored = a.p.stored(h.failed, h.start, h.end)
	if h.peer.n != absent {
		e.peer = a.ids.of(b, h.peer)
	}
	if h.db.n != absent {
		// The database is not traced: its side of the edge is the client span's.
		e.server, e.serverLatency = a.ids.of(b, h.db), h.latency
	}
}

// expireBefore expires the waiting edges whose ttl ends by deadline; what they record is
// stamped now. With deadline now, the store_expiration_loop duty.
func (a *aggregator) expireBefore(deadline, now int64) {
	for id := a.pairs.oldest; id >= 0 && a.pairs.edges[id].expires <= deadline; id = a.pairs.oldest {
		a.expireEdge(id, now)
	}
	a.tel.pending.Store(int64(a.pairs.n))
}

// expireEdge counts edge id as expired and, with virtual nodes on, records it as servicegraph's
// onExpire does: a root server span's as a request from "user", a client span's as one to the
// virtual node its peer attribute names ("unknown" without one).
func (a *aggregator) expireEdge(id int32, now int64) {
	e, dims := &a.pairs.edges[id], a.pairs.dimsOf(id)
	if e.kept {
		// Paired already: it only waited for the message's other consumers.
		a.pairs.remove(id)
		return
	}
	a.tel.expiredEdges.Add(1)
	if a.p.peerAttrs != nil {
		e.conn = connVirtual
		if e.client == 0 && e.span.IsEmpty() {
			e.client = a.userID
			if a.p.virtualNodeLabel {
				e.label = labelClient
			}
			a.record(e, dims, now)
		}
		if e.server == 0 {
			e.server = a.unknownID
			if e.peer != noValue {
				e.server = e.peer
			}
			if a.p.virtualNodeLabel {
				e.label = labelServer
			}
			a.record(e, dims, now)
		}
	}
	a.pairs.remove(id)
}

// clean removes the series idle for series_expiration and the strings nobody refers to: the
// cache_loop duty.
func (a *aggregator) clean(now int64) {
	a.series.expire(now - int64(a.p.seriesExpiration))
	a.ids.startMark()
	a.pairs.markStrings(a.ids)
	a.series.markStrings(a.ids)
	a.ids.sweep(a.userID, a.unknownID, a.overflowID)
	a.tel.series.Store(int64(a.series.live))
}
