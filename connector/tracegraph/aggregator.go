package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"math"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/otelcol-red/otelcol-red/internal/intake"
)

// aggregator is the one goroutine that owns the pair table, the series table and the interned
// strings: no lock anywhere in them. It drains the intake ring, pairs halves into edges,
// records complete edges, expires waiting ones on store_expiration_loop, removes idle series on
// cache_loop and builds the metrics on metrics_flush_interval (flusher.go).
type aggregator struct {
	p      *plan
	pipe   *intake.Pipe[halfBatch]
	clock  clockwork.Clock
	tel    *telemetry
	fl     *flusher
	pairs  *pairTable
	series *seriesTable
	in     *interner

	// wakeItems is how many queued batches wake the aggregator; the flush ticker covers quiet
	// periods.
	wakeItems int
	buf       []*halfBatch
	// scratch is a new edge being assembled before it is known whether it waits.
	scratch     edge
	scratchDims []uint32
	// userID and unknownID are the interned names of servicegraph's virtual nodes.
	userID, unknownID uint32

	stop chan struct{}
	done chan struct{}
}

func newAggregator(p *plan, pipe *intake.Pipe[halfBatch], clock clockwork.Clock, tel *telemetry, fl *flusher) *aggregator {
	a := &aggregator{
		p: p, pipe: pipe, clock: clock, tel: tel, fl: fl,
		pairs:       newPairTable(len(p.dims)),
		series:      newSeriesTable(p),
		in:          newInterner(),
		wakeItems:   max(1, min(16, pipe.Queue.Cap()/8)),
		buf:         pipe.Queue.DrainBuffer(),
		scratchDims: make([]uint32, 2*len(p.dims)),
		stop:        make(chan struct{}),
		done:        make(chan struct{}),
	}
	if p.flushInterval <= 0 {
		a.wakeItems = 1 // flush after each batch, as servicegraph after each ConsumeTraces
	}
	a.userID, a.unknownID = a.in.idString("user"), a.in.idString("unknown")
	return a
}

// tickers are the aggregator's periodic duties; a nil channel never fires.
type tickers struct {
	flush, expire, clean clockwork.Ticker
}

func (t *tickers) chans() (flush, expire, clean <-chan time.Time) {
	return chanOf(t.flush), chanOf(t.expire), chanOf(t.clean)
}

func (t *tickers) stop() {
	for _, k := range []clockwork.Ticker{t.flush, t.expire, t.clean} {
		if k != nil {
			k.Stop()
		}
	}
}

func chanOf(t clockwork.Ticker) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.Chan()
}

// fired reports whether c has a tick waiting, without blocking (a nil c never has).
func fired(c <-chan time.Time) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (a *aggregator) run(t tickers) {
	defer close(a.done)
	flushC, expireC, cleanC := t.chans()
	var flushDue, expireDue, cleanDue bool
	for {
		if !a.pipe.Queue.Arm(a.wakeItems) {
			select {
			case <-a.pipe.Queue.Wake():
			case <-flushC:
				flushDue = true
			case <-expireC:
				expireDue = true
			case <-cleanC:
				cleanDue = true
			case <-a.stop:
				a.pipe.Queue.Disarm()
				a.finish()
				return
			}
		}
		a.pipe.Queue.Disarm()
		applied := a.drain()
		// Under sustained load Arm keeps finding batches and the select above is not reached:
		// look at the tickers on every round.
		if !flushDue && fired(flushC) {
			// The tick came during the round: batches queued before it may have come after
			// the round's Drain. One more round takes them (at most one ring), so the flush
			// holds every span whose ConsumeTraces returned before the tick.
			flushDue = true
			applied += a.drain()
		}
		expireDue = expireDue || fired(expireC)
		cleanDue = cleanDue || fired(cleanC)
		now := a.clock.Now().UnixNano()
		if expireDue {
			a.expireBefore(now, now)
			expireDue = false
		}
		if cleanDue {
			a.clean(now)
			cleanDue = false
		}
		if flushDue || (a.p.flushInterval <= 0 && applied > 0) {
			a.fl.flush(a, false)
			flushDue = false
		}
	}
}

// finish drains the ring, expires every waiting edge (its pair can no longer arrive: the state
// is lost with the process, so it counts as it would have at its ttl) and flushes a last time.
func (a *aggregator) finish() {
	a.drain()
	a.expireBefore(math.MaxInt64, a.clock.Now().UnixNano())
	a.fl.flush(a, true)
}

// drain applies every batch queued and returns how many there were.
func (a *aggregator) drain() int {
	a.buf = a.pipe.Queue.Drain(a.buf[:0])
	if len(a.buf) == 0 {
		return 0
	}
	now := a.clock.Now().UnixNano()
	spans := 0
	for i, b := range a.buf {
		for j := range b.halves {
			a.apply(b, &b.halves[j], now)
		}
		spans += b.spans
		a.tel.invalidWeights.Add(int64(b.invalidWeights))
		a.tel.noService.Add(int64(b.noService))
		a.tel.backwards.Add(int64(b.backwards))
		a.pipe.Recycle(b)
		a.buf[i] = nil
	}
	a.tel.receivedSpans.Add(int64(spans))
	a.tel.pending.Store(int64(a.pairs.n))
	a.tel.series.Store(int64(a.series.live))
	return len(a.buf)
}

// apply merges half h into the edge it belongs to, servicegraph's UpsertEdge: an edge is
// recorded once, when its second half arrives (or its only one, for a database), whether the
// halves came in one batch or in batches flushes apart.
func (a *aggregator) apply(b *halfBatch, h *half, now int64) {
	hh := a.pairs.hashOf(h.trace, h.span)
	id := a.pairs.find(hh, h.trace, h.span)
	var e *edge
	var dims []uint32
	if id >= 0 {
		e, dims = &a.pairs.edges[id], a.pairs.dimsOf(id)
	} else {
		a.scratch = edge{trace: h.trace, span: h.span, hash: hh, peer: noValue}
		e, dims = &a.scratch, a.scratchDims
		for i := range dims {
			dims[i] = noValue
		}
	}
	a.merge(e, dims, b, h)
	if e.complete() {
		a.series.record(e, dims, now)
		if id >= 0 {
			a.pairs.remove(id)
		} else {
			a.tel.totalEdges.Add(1)
		}
		return
	}
	if id >= 0 {
		return
	}
	a.tel.totalEdges.Add(1)
	if a.pairs.n >= a.p.maxItems {
		// Full: the oldest waiting half is the likeliest never to be paired; it goes the way
		// of an expired one (servicegraph drops the new half instead).
		a.tel.evictedEdges.Add(1)
		a.expireEdge(a.pairs.oldest, now)
	}
	e.expires = now + int64(a.p.ttl)
	a.pairs.insert(e, dims)
}

// merge writes half h into e, as servicegraph's update callbacks do.
func (a *aggregator) merge(e *edge, dims []uint32, b *halfBatch, h *half) {
	svc := a.in.of(b, h.service)
	e.failed = e.failed || h.failed
	e.weight = max(e.weight, h.weight)
	// database > messaging > unknown, whichever half came first (servicegraph: the last one).
	e.conn = max(e.conn, h.conn)
	at := 0
	if h.side == serverSide {
		at = len(a.p.dims)
	}
	for i := range a.p.dims {
		if v := a.in.of(b, b.dims[int(h.dims)+i]); v != noValue {
			dims[at+i] = v
		}
	}
	if h.side == serverSide {
		e.server, e.serverLatency = svc, h.latency
		return
	}
	e.client, e.clientLatency = svc, h.latency
	if h.peer.n != absent {
		e.peer = a.in.of(b, h.peer)
	}
	if h.db.n != absent {
		// The database is not traced: its side of the edge is the client span's.
		e.server, e.serverLatency = a.in.of(b, h.db), h.latency
	}
}

// expireBefore expires the waiting edges whose ttl ends by deadline; what they record is
// stamped now.
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
	a.tel.expiredEdges.Add(1)
	if a.p.peerAttrs != nil {
		e.conn = connVirtual
		if e.client == 0 && e.span.IsEmpty() {
			e.client = a.userID
			if a.p.virtualLabel {
				e.label = labelClient
			}
			a.series.record(e, dims, now)
		}
		if e.server == 0 {
			e.server = a.unknownID
			if e.peer != noValue {
				e.server = e.peer
			}
			if a.p.virtualLabel {
				e.label = labelServer
			}
			a.series.record(e, dims, now)
		}
	}
	a.pairs.remove(id)
}

// clean removes the series idle for series_expiration and the strings nobody refers to.
func (a *aggregator) clean(now int64) {
	a.series.expire(now - int64(a.p.seriesExpiration))
	a.in.startMark()
	a.pairs.markStrings(a.in)
	a.series.markStrings(a.in)
	a.in.sweep(a.userID, a.unknownID)
	a.tel.series.Store(int64(a.series.live))
}
