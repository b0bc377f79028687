package otlpwire // import "github.com/otelcol-red/otelcol-red/internal/otlpwire"

// Views of the decoded tree. Each is a Decoder and a record of its index: two words, passed
// by value, valid until the Decoder's next Decode. Byte slices they return point into the
// request (no copies); IDs are returned as arrays (copies of 16 or 8 bytes).

// Resource is one ResourceSpans: its resource's attributes and its scopes.
type Resource struct {
	d *Decoder
	r *resourceRec
}

// Attributes returns the resource's attributes (from every occurrence of the resource field,
// appended, as pdata merges them).
func (r Resource) Attributes() Attributes {
	return Attributes{buf: r.d.buf, kvs: r.d.ix.resourceKVs[r.r.attrs.first:r.r.attrs.end]}
}

// NumScopes returns the number of scopes.
func (r Resource) NumScopes() int { return r.r.scopes.len() }

// Scope returns the i-th scope.
func (r Resource) Scope(i int) Scope {
	return Scope{d: r.d, r: &r.d.ix.scopes[r.r.scopes.first:r.r.scopes.end][i]}
}

// Scope is one ScopeSpans: its instrumentation scope and its spans.
type Scope struct {
	d *Decoder
	r *scopeRec
}

func (s Scope) Name() []byte    { return s.d.bytes(s.r.name) }
func (s Scope) Version() []byte { return s.d.bytes(s.r.version) }

func (s Scope) Attributes() Attributes {
	return Attributes{buf: s.d.buf, kvs: s.d.ix.scopeKVs[s.r.attrs.first:s.r.attrs.end]}
}

// NumSpans returns the number of spans.
func (s Scope) NumSpans() int { return s.r.spans.len() }

// Span returns the i-th span.
func (s Scope) Span(i int) Span {
	return Span{d: s.d, r: &s.d.ix.spans[s.r.spans.first:s.r.spans.end][i]}
}

// Span is one span.
type Span struct {
	d *Decoder
	r *spanRec
}

func (s Span) TraceID() [16]byte         { return s.d.traceID(s.r.traceID) }
func (s Span) SpanID() [8]byte           { return s.d.spanID(s.r.spanID) }
func (s Span) ParentSpanID() [8]byte     { return s.d.spanID(s.r.parentID) }
func (s Span) TraceState() []byte        { return s.d.bytes(s.r.traceState) }
func (s Span) Name() []byte              { return s.d.bytes(s.r.name) }
func (s Span) StatusMessage() []byte     { return s.d.bytes(s.r.statusMessage) }
func (s Span) Flags() uint32             { return s.r.flags }
func (s Span) StartTimeUnixNano() uint64 { return s.r.start }
func (s Span) EndTimeUnixNano() uint64   { return s.r.end }

// Kind returns the span kind as the OTLP enum number (ptrace.SpanKind(k) converts); like
// pdata it keeps numbers outside the enum.
func (s Span) Kind() int32 { return s.r.kind }

// StatusCode returns the status code as the OTLP enum number (ptrace.StatusCode(c) converts).
func (s Span) StatusCode() int32 { return s.r.statusCode }

func (s Span) Attributes() Attributes {
	return Attributes{buf: s.d.buf, kvs: s.d.ix.spanKVs[s.r.attrs.first:s.r.attrs.end]}
}

func (s Span) NumEvents() int { return s.r.events.len() }

func (s Span) Event(i int) Event {
	return Event{d: s.d, r: &s.d.ix.events[s.r.events.first:s.r.events.end][i]}
}

func (s Span) NumLinks() int { return s.r.links.len() }

func (s Span) Link(i int) Link {
	return Link{d: s.d, r: &s.d.ix.links[s.r.links.first:s.r.links.end][i]}
}

// Event is one span event.
type Event struct {
	d *Decoder
	r *eventRec
}

func (e Event) Name() []byte         { return e.d.bytes(e.r.name) }
func (e Event) TimeUnixNano() uint64 { return e.r.time }

func (e Event) Attributes() Attributes {
	return Attributes{buf: e.d.buf, kvs: e.d.ix.eventKVs[e.r.attrs.first:e.r.attrs.end]}
}

// Link is one span link.
type Link struct {
	d *Decoder
	r *linkRec
}

func (l Link) TraceID() [16]byte  { return l.d.traceID(l.r.traceID) }
func (l Link) SpanID() [8]byte    { return l.d.spanID(l.r.spanID) }
func (l Link) TraceState() []byte { return l.d.bytes(l.r.traceState) }
func (l Link) Flags() uint32      { return l.r.flags }

func (l Link) Attributes() Attributes {
	return Attributes{buf: l.d.buf, kvs: l.d.ix.linkKVs[l.r.attrs.first:l.r.attrs.end]}
}
