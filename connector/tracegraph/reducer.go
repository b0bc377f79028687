package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/intake"
	"github.com/otelcol-red/otelcol-red/internal/sampling"
)

// reducer turns spans into half edges. It is immutable, but for its size hints (atomics), and
// shared by every producer: a ConsumeTraces call writes only into its own batch, so producers
// never contend.
type reducer struct {
	p     *plan
	hints *intake.SizeHints
}

// reduce appends one half per CLIENT, SERVER, PRODUCER or CONSUMER span of td to b. Spans of
// resources without service.name are skipped, as servicegraph skips them, and counted.
func (r reducer) reduce(b *halfBatch, td ptrace.Traces) {
	b.reserve(r.hints)
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			b.spans += sss.At(j).Spans().Len()
		}
		res := rs.Resource().Attributes()
		sv, ok := res.Get("service.name")
		if !ok {
			for j := 0; j < sss.Len(); j++ {
				b.noService += sss.At(j).Spans().Len()
			}
			continue
		}
		service := b.appendValue(sv)
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				r.reduceSpan(b, spans.At(k), service, res)
			}
		}
	}
	b.measure(r.hints)
}

func (r reducer) reduceSpan(b *halfBatch, span ptrace.Span, service text, res pcommon.Map) {
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
	h.failed = span.Status().Code() == ptrace.StatusCodeError
	// An end before the start is a broken clock, not a 584-year call: servicegraph's uint64
	// difference wraps to that; the latency counts 0 here (as spanmetrics does for durations),
	// and the span is counted.
	if end, start := span.EndTimestamp(), span.StartTimestamp(); end >= start {
		h.latency = r.p.latency(uint64(end - start))
	} else {
		b.backwards++
	}
	h.weight = r.weight(b, span)
	h.dims = uint32(len(b.dims))
	for _, d := range r.p.dims {
		b.dims = append(b.dims, b.lookup(d, res, attrs))
	}
	if h.side == clientSide {
		for _, a := range r.p.peerAttrs {
			if v, ok := attrs.Get(a); ok {
				h.peer = b.appendValue(v)
				break
			}
		}
		// A database is not traced: the client span alone is the edge.
		for _, a := range r.p.dbAttrs {
			if t := b.lookup(a, res, attrs); t.n != absent {
				h.db, h.conn = t, connDatabase
				break
			}
		}
	}
	b.halves = append(b.halves, h)
}

// weight returns span's adjusted count from its tracestate, 1 without one.
func (r reducer) weight(b *halfBatch, span ptrace.Span) float64 {
	if !r.p.weighted {
		return 1
	}
	ts := span.TraceState().AsRaw()
	if ts == "" {
		return 1
	}
	if ts != b.lastTS {
		w, st := sampling.FromTraceState(ts)
		b.lastTS, b.lastWeight, b.lastValid = ts, w, st != sampling.Invalid
	}
	if !b.lastValid {
		b.invalidWeights++
	}
	return b.lastWeight
}
