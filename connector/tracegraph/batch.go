package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-red/otelcol-red/internal/intake"
	"github.com/otelcol-red/otelcol-red/internal/latespans"
	"github.com/otelcol-red/otelcol-red/internal/sampling"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
)

// side says which end of a call a half edge describes.
type side uint8

const (
	clientSide side = iota // CLIENT or PRODUCER span, keyed by its own span ID
	serverSide             // SERVER or CONSUMER span, keyed by its parent span ID
)

// connection is an edge's connection_type.
type connection uint8

const (
	connUnknown connection = iota
	connMessaging
	connDatabase
	connVirtual
)

var connectionNames = [...]string{connUnknown: "", connMessaging: "messaging_system", connDatabase: "database", connVirtual: "virtual_node"}

// text is a string written into a batch's arena: bytes [off, off+n). n == absent: no value.
type text struct{ off, n uint32 }

const absent = ^uint32(0)

// half is one span's end of an edge, as a producer hands it over: fixed size, no pointers, its
// strings in the batch's arena.
type half struct {
	trace   pcommon.TraceID
	span    pcommon.SpanID // the client span's ID; for a server span, its parent's
	side    side
	conn    connection // connMessaging for PRODUCER/CONSUMER, connDatabase for a database call
	failed  bool
	late    bool    // ends outside late_spans' slack (latespans.go)
	latency float64 // in the metrics' unit
	weight  float64 // adjusted count, 1 without sampling information
	service text
	peer    text // client only: the first virtual_node_peer_attributes value found
	db      text // client only: the database name that makes it a database edge
	dims    uint32
	// linked: a CONSUMER span's half paired through one of its links; trace and span are the
	// link's (the PRODUCER span's), ownTrace the consumer's own trace.
	linked   bool
	ownTrace pcommon.TraceID
	own      pcommon.SpanID // the span's own ID, named by exemplars
	// start and end are the span's times (unix ns): the messaging latency is the time from the
	// producer's end to the consumer's start.
	start, end uint64
}

// halfBatch is what one ConsumeTraces call hands to the aggregator. Its slices keep their
// capacity when it is recycled through the free list, so a warm steady state allocates nothing.
type halfBatch struct {
	halves []half
	// dims holds len(plan.dims) values per half, from half.dims.
	dims []text
	// arena holds every string of the batch.
	arena []byte
	// spans counts the spans of the request, edges or not, skipped resources included.
	spans int
	// invalidWeights counts spans whose sampling threshold was invalid (counted 1).
	invalidWeights int
	// noService counts the spans of resources without service.name (no edge can name them);
	// backwards counts edge spans that end before they start (their latency counted 0).
	noService, backwards int
	// held is the footprint PutSized counted, returned with Release.
	held int64

	// now is when the batch was reduced, the time late_spans judges end times against; late
	// counts what it saw of them (internal/latespans).
	now  int64
	late latespans.Counts
	// The cursors a request is reduced with, one set per source (below), kept here rather
	// than on the stack: calls that read attributes through traceview (filter_policies,
	// sampling.attribute) let the compiler move them to the heap, once per request.
	pdataCursors cursors[traceview.Pdata]
	wireCursors  cursors[traceview.Wire]

	// lastTS memoizes the last tracestate parsed: a sampler writes the same one on every span.
	lastTS     string
	lastWeight float64
	lastStatus sampling.Status
}

// halfBatches is how the intake pipe handles halfBatch. A batch of spans without edge halves
// still goes to the aggregator, which counts the spans received.
var halfBatches = intake.Batch[halfBatch]{
	Reset:     (*halfBatch).reset,
	Empty:     func(b *halfBatch) bool { return len(b.halves) == 0 && b.spans == 0 },
	Footprint: (*halfBatch).footprint,
	Held:      func(b *halfBatch) *int64 { return &b.held },
}

func (b *halfBatch) reset() {
	b.halves = b.halves[:0]
	b.dims = b.dims[:0]
	b.arena = b.arena[:0]
	b.spans, b.invalidWeights, b.held = 0, 0, 0
	b.noService, b.backwards = 0, 0
	b.late = latespans.Counts{}
	b.lastTS = ""
}

// footprint is the bytes the batch retains, for the ring's and the free list's byte bounds.
func (b *halfBatch) footprint() int64 {
	return int64(cap(b.halves))*int64(unsafe.Sizeof(half{})) +
		int64(cap(b.dims))*int64(unsafe.Sizeof(text{})) + int64(cap(b.arena))
}

// appendText writes s into the arena.
func (b *halfBatch) appendText(s string) text {
	t := text{off: uint32(len(b.arena)), n: uint32(len(s))}
	b.arena = append(b.arena, s...)
	return t
}

// bytes returns t's bytes (nil when absent); valid until the batch is reset.
func (b *halfBatch) bytes(t text) []byte {
	if t.n == absent {
		return nil
	}
	return b.arena[t.off : t.off+t.n]
}

// The buffers of a batch that intake.SizeHints sizes: a batch from the free list is grown to
// what recent requests needed before it reduces anything (intake.SizeHints has why).
const (
	hintHalves = iota
	hintDims
	hintArena
	numHints
)

// maxHint bounds each hint: one huge request must not make every pooled batch huge.
const maxHint = 1 << 14

// reserve grows b's buffers, empty, to the hints.
func (b *halfBatch) reserve(h *intake.SizeHints) {
	b.halves = intake.Reserve(b.halves, h.Get(hintHalves))
	b.dims = intake.Reserve(b.dims, h.Get(hintDims))
	b.arena = intake.Reserve(b.arena, h.Get(hintArena))
}

// measure raises the hints to what b needed.
func (b *halfBatch) measure(h *intake.SizeHints) {
	h.Raise(hintHalves, len(b.halves))
	h.Raise(hintDims, len(b.dims))
	h.Raise(hintArena, len(b.arena))
}

// lookup writes the string form of attribute key, from the resource or else the span
// (servicegraph's order), into b; absent when neither has it.
func lookup[S traceview.Source](b *halfBatch, key string, res, attrs traceview.Attrs[S]) text {
	if t, ok := appendAttr(b, res, key); ok {
		return t
	}
	if t, ok := appendAttr(b, attrs, key); ok {
		return t
	}
	return text{n: absent}
}

// appendAttr writes the string form (pcommon's AsString) of the value of attribute key into
// the arena, from either source: scalars without allocating (traceview.Value.AppendString).
func appendAttr[S traceview.Source](b *halfBatch, attrs traceview.Attrs[S], key string) (text, bool) {
	off := uint32(len(b.arena))
	var ok bool
	b.arena, ok = attrs.AppendString(b.arena, key)
	if !ok {
		return text{n: absent}, false
	}
	return text{off: off, n: uint32(len(b.arena)) - off}, true
}

// cursors are the cursors a request is reduced with: on the resource, scope and span being read.
type cursors[S traceview.Source] struct {
	rs   traceview.Resource[S]
	sc   traceview.Scope[S]
	span traceview.Span[S]
}

// cursorsOf returns b's cursors for source S.
func cursorsOf[S traceview.Source](b *halfBatch) *cursors[S] {
	if traceview.IsWire[S]() {
		return any(&b.wireCursors).(*cursors[S])
	}
	return any(&b.pdataCursors).(*cursors[S])
}
