package traceview // import "github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"

import (
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
)

// Source is where a request is read from: Pdata or Wire.
type Source interface{ Pdata | Wire }

// Pdata reads ptrace.Traces.
type Pdata [0]struct{}

// Wire reads a request an otlpwire.Decoder decoded.
type Wire [1]struct{}

// IsWire reports whether S is Wire: a constant in each instantiation (see the package doc).
func IsWire[S Source]() bool {
	var s S
	return len(s) == 1
}

// String views b as a string without copying it. b must not change while the string is used:
// for the wire source, b is the request, which nothing changes.
func String(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// Request is a request to read.
type Request[S Source] struct {
	pd ptrace.ResourceSpansSlice
	w  *otlpwire.Decoder
}

// FromPdata reads td.
func FromPdata(td ptrace.Traces) Request[Pdata] {
	return Request[Pdata]{pd: td.ResourceSpans()}
}

// FromWire reads the request d decoded last, until d decodes another.
func FromWire(d *otlpwire.Decoder) Request[Wire] { return Request[Wire]{w: d} }

// NumResources returns the number of ResourceSpans.
func (r Request[S]) NumResources() int {
	if IsWire[S]() {
		return r.w.NumResources()
	}
	return r.pd.Len()
}

// NumSpans returns the number of spans, over all resources and scopes.
func (r Request[S]) NumSpans() int {
	if IsWire[S]() {
		return r.w.NumSpans()
	}
	n := 0
	for i := range r.pd.Len() {
		sss := r.pd.At(i).ScopeSpans()
		for j := range sss.Len() {
			n += sss.At(j).Spans().Len()
		}
	}
	return n
}

// ReadResource points dst at the i-th ResourceSpans.
func (r Request[S]) ReadResource(i int, dst *Resource[S]) {
	if IsWire[S]() {
		dst.w = r.w.Resource(i)
		dst.wattrs = dst.w.Attributes()
		return
	}
	dst.pd = r.pd.At(i)
}

// Resource is a cursor on one ResourceSpans (Request.ReadResource).
type Resource[S Source] struct {
	pd     ptrace.ResourceSpans
	w      otlpwire.Resource
	wattrs otlpwire.Attributes
}

// Attributes returns the resource's attributes, valid until the cursor moves.
func (r *Resource[S]) Attributes() Attrs[S] {
	if IsWire[S]() {
		return Attrs[S]{w: &r.wattrs}
	}
	return Attrs[S]{pd: r.pd.Resource().Attributes()}
}

// NumScopes returns the number of ScopeSpans.
func (r *Resource[S]) NumScopes() int {
	if IsWire[S]() {
		return r.w.NumScopes()
	}
	return r.pd.ScopeSpans().Len()
}

// ReadScope points dst at the j-th ScopeSpans.
func (r *Resource[S]) ReadScope(j int, dst *Scope[S]) {
	if IsWire[S]() {
		dst.w = r.w.Scope(j)
		dst.Name, dst.Version = String(dst.w.Name()), String(dst.w.Version())
		return
	}
	ss := r.pd.ScopeSpans().At(j)
	dst.spans = ss.Spans()
	sc := ss.Scope()
	dst.Name, dst.Version = sc.Name(), sc.Version()
}

// Scope is a cursor on one ScopeSpans (Resource.ReadScope): its instrumentation scope's name
// and version, and its spans.
type Scope[S Source] struct {
	Name, Version string

	spans ptrace.SpanSlice
	w     otlpwire.Scope
}

// NumSpans returns the number of spans.
func (s *Scope[S]) NumSpans() int {
	if IsWire[S]() {
		return s.w.NumSpans()
	}
	return s.spans.Len()
}

// PdataSpans returns the pdata spans of a Pdata scope, for code that is about pdata's memory
// (reading ahead of the spans); empty for Wire.
func (s *Scope[S]) PdataSpans() ptrace.SpanSlice { return s.spans }

// ReadSpan points dst at the k-th span.
func (s *Scope[S]) ReadSpan(k int, dst *Span[S]) {
	if IsWire[S]() {
		dst.w = s.w.Span(k)
		dst.wattrs = dst.w.Attributes()
		return
	}
	dst.pd = s.spans.At(k)
}

// Span is a cursor on one span (Scope.ReadSpan). Its accessors are small enough for the
// compiler to inline into the caller, each down to the one source's field read.
type Span[S Source] struct {
	pd     ptrace.Span
	w      otlpwire.Span
	wattrs otlpwire.Attributes
}

// Name returns the span's name.
func (s *Span[S]) Name() string {
	if IsWire[S]() {
		return String(s.w.Name())
	}
	return s.pd.Name()
}

// Kind returns the span's kind, numbers outside the enum kept, as pdata keeps them.
func (s *Span[S]) Kind() ptrace.SpanKind {
	if IsWire[S]() {
		return ptrace.SpanKind(s.w.Kind())
	}
	return s.pd.Kind()
}

// StatusCode returns the span's status code, numbers outside the enum kept.
func (s *Span[S]) StatusCode() ptrace.StatusCode {
	if IsWire[S]() {
		return ptrace.StatusCode(s.w.StatusCode())
	}
	return s.pd.Status().Code()
}

// StatusMessage returns the span's status message, "" when absent.
func (s *Span[S]) StatusMessage() string {
	if IsWire[S]() {
		return String(s.w.StatusMessage())
	}
	return s.pd.Status().Message()
}

// StartTimestamp and EndTimestamp return the span's times in unix nanoseconds.
func (s *Span[S]) StartTimestamp() uint64 {
	if IsWire[S]() {
		return s.w.StartTimeUnixNano()
	}
	return uint64(s.pd.StartTimestamp())
}

func (s *Span[S]) EndTimestamp() uint64 {
	if IsWire[S]() {
		return s.w.EndTimeUnixNano()
	}
	return uint64(s.pd.EndTimestamp())
}

// TraceID, SpanID and ParentSpanID return the span's IDs (all zero when absent).
func (s *Span[S]) TraceID() pcommon.TraceID {
	if IsWire[S]() {
		return s.w.TraceID()
	}
	return s.pd.TraceID()
}

func (s *Span[S]) SpanID() pcommon.SpanID {
	if IsWire[S]() {
		return s.w.SpanID()
	}
	return s.pd.SpanID()
}

func (s *Span[S]) ParentSpanID() pcommon.SpanID {
	if IsWire[S]() {
		return s.w.ParentSpanID()
	}
	return s.pd.ParentSpanID()
}

// TraceState returns the span's W3C tracestate, "" when absent.
func (s *Span[S]) TraceState() string {
	if IsWire[S]() {
		return String(s.w.TraceState())
	}
	return s.pd.TraceState().AsRaw()
}

// Attributes returns the span's attributes, valid until the cursor moves.
func (s *Span[S]) Attributes() Attrs[S] {
	if IsWire[S]() {
		return Attrs[S]{w: &s.wattrs}
	}
	return Attrs[S]{pd: s.pd.Attributes()}
}

// NumEvents returns the number of span events.
func (s *Span[S]) NumEvents() int {
	if IsWire[S]() {
		return s.w.NumEvents()
	}
	return s.pd.Events().Len()
}

// ReadEvent points dst at the l-th event.
func (s *Span[S]) ReadEvent(l int, dst *Event[S]) {
	if IsWire[S]() {
		dst.wattrs = s.w.Event(l).Attributes()
		return
	}
	dst.pd = s.pd.Events().At(l)
}

// NumLinks returns the number of span links.
func (s *Span[S]) NumLinks() int {
	if IsWire[S]() {
		return s.w.NumLinks()
	}
	return s.pd.Links().Len()
}

// LinkIDs returns the trace and span IDs of the l-th link, the span context it points at (all
// zero when absent). A link's other fields are not read by the connectors, so there is no link
// cursor.
func (s *Span[S]) LinkIDs(l int) (pcommon.TraceID, pcommon.SpanID) {
	if IsWire[S]() {
		k := s.w.Link(l)
		return k.TraceID(), k.SpanID()
	}
	k := s.pd.Links().At(l)
	return k.TraceID(), k.SpanID()
}

// Event is a cursor on one span event (Span.ReadEvent).
type Event[S Source] struct {
	pd     ptrace.SpanEvent
	wattrs otlpwire.Attributes
}

// Attributes returns the event's attributes, valid until the cursor moves.
func (e *Event[S]) Attributes() Attrs[S] {
	if IsWire[S]() {
		return Attrs[S]{w: &e.wattrs}
	}
	return Attrs[S]{pd: e.pd.Attributes()}
}
