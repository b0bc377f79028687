package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/intake"
	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
	"github.com/otelcol-red/otelcol-red/internal/sampling"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
)

// reducer turns spans into half edges. It is immutable, but for its size hints (atomics), and
// shared by every producer: a ConsumeTraces call writes only into its own batch, so producers
// never contend.
type reducer struct {
	p     *plan
	hints *intake.SizeHints
	// filtered counts the spans filter_policies dropped (filter.go), once per request.
	filtered *atomic.Int64
}

// reduce appends one half per CLIENT, SERVER, PRODUCER or CONSUMER span of td to b. Spans of
// resources without service.name are skipped, as servicegraph skips them, and counted.
func (r reducer) reduce(b *halfBatch, td ptrace.Traces) {
	reduceRequest(r, b, traceview.FromPdata(td))
}

// reduceWire is reduce for the request d decoded (wire traces): the same halves from the same
// spans (TestWireSameMetrics), without pdata.
func (r reducer) reduceWire(b *halfBatch, d *otlpwire.Decoder) {
	reduceRequest(r, b, traceview.FromWire(d))
}

// reduceRequest is reduce and reduceWire, written once over traceview and compiled for each
// source.
func reduceRequest[S traceview.Source](r reducer, b *halfBatch, req traceview.Request[S]) {
	b.reserve(r.hints)
	var filtered int64
	c := cursorsOf[S](b)
	rs, sc, span := &c.rs, &c.sc, &c.span
	for i := range req.NumResources() {
		req.ReadResource(i, rs)
		n := 0
		for j := range rs.NumScopes() {
			rs.ReadScope(j, sc)
			n += sc.NumSpans()
		}
		b.spans += n
		res := rs.Attributes()
		service, ok := appendAttr(b, res, "service.name")
		if !ok {
			b.noService += n
			continue
		}
		for j := range rs.NumScopes() {
			rs.ReadScope(j, sc)
			for k := range sc.NumSpans() {
				sc.ReadSpan(k, span)
				if r.p.filter != nil && filteredOut(r.p.filter, res, span, &filtered) {
					continue
				}
				reduceSpan(r, b, span, service, res)
			}
		}
	}
	if filtered > 0 {
		r.filtered.Add(filtered)
	}
	b.measure(r.hints)
	// They point into the request, which a pooled batch must not keep alive.
	b.lastTS = ""
	*c = cursors[S]{}
}

func reduceSpan[S traceview.Source](r reducer, b *halfBatch, span *traceview.Span[S], service text, res traceview.Attrs[S]) {
	h := half{service: service, peer: text{n: absent}, db: text{n: absent}}
	switch span.Kind() {
	case ptrace.SpanKindProducer:
		h.conn = connMessaging
		fallthrough
	case ptrace.SpanKindClient:
		h.side, h.span = clientSide, span.SpanID()
	case ptrace.SpanKindConsumer:
		h.conn = connMessaging
		fallthrough
	case ptrace.SpanKindServer:
		h.side, h.span = serverSide, span.ParentSpanID()
	default:
		return // not part of an edge
	}
	attrs := span.Attributes()
	h.trace = span.TraceID()
	h.ownTrace, h.own = h.trace, span.SpanID()
	h.failed = span.StatusCode() == ptrace.StatusCodeError
	h.start, h.end = span.StartTimestamp(), span.EndTimestamp()
	h.late = r.p.late.Outside(&b.late, b.now, h.end)
	// An end before the start is a broken clock, not a 584-year call: servicegraph's uint64
	// difference wraps to that; the latency counts 0 here (as spanmetrics does for durations),
	// and the span is counted.
	if end, start := h.end, h.start; end >= start {
		h.latency = r.p.latency(end - start)
	} else {
		b.backwards++
	}
	h.weight = spanWeight(r, b, span.TraceState(), attrs, res)
	h.dims = uint32(len(b.dims))
	for _, d := range r.p.dims {
		b.dims = append(b.dims, lookup(b, d, res, attrs))
	}
	if h.side == clientSide {
		for _, a := range r.p.peerAttrs {
			if t, ok := appendAttr(b, attrs, a); ok {
				h.peer = t
				break
			}
		}
		// A database is not traced: the client span alone is the edge.
		for _, a := range r.p.dbAttrs {
			if t := lookup(b, a, res, attrs); t.n != absent {
				h.db, h.conn = t, connDatabase
				break
			}
		}
	}
	if h.conn == connMessaging && h.side == serverSide && r.p.links && span.NumLinks() > 0 && appendLinked(b, h, span) {
		return
	}
	b.halves = append(b.halves, h)
}

// appendLinked appends consumer half h once per link of span, keyed by the span it links to (the
// message's PRODUCER span), and reports whether there was any: a CONSUMER span with links is
// paired through them, not through its parent (links.enabled). A link without a span ID points
// at nothing to pair with and is skipped; a span with no other pairs through its parent.
func appendLinked[S traceview.Source](b *halfBatch, h half, span *traceview.Span[S]) bool {
	h.linked = true
	n := 0
	for l := range span.NumLinks() {
		if h.trace, h.span = span.LinkIDs(l); h.span.IsEmpty() {
			continue
		}
		b.halves = append(b.halves, h)
		n++
	}
	return n > 0
}

// spanWeight returns a span's adjusted count from its tracestate ts, else from sampling.attribute
// (multiplier.go) on the span's attributes or its resource's, 1 without either.
func spanWeight[S traceview.Source](r reducer, b *halfBatch, ts string, attrs, res traceview.Attrs[S]) float64 {
	if !r.p.weighted {
		return 1
	}
	if ts != "" {
		if ts != b.lastTS {
			w, st := sampling.FromTraceState(ts)
			b.lastTS, b.lastWeight, b.lastStatus = ts, w, st
		}
		switch b.lastStatus {
		case sampling.Valid:
			return b.lastWeight
		case sampling.Invalid:
			b.invalidWeights++
			return 1
		}
	}
	if r.p.weightAttr == "" {
		return 1
	}
	return attributeWeight(r.p.weightAttr, b, attrs, res)
}
