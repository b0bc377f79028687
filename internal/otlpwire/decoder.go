package otlpwire // import "github.com/otelcol-red/otelcol-red/internal/otlpwire"

// Decoder decodes OTLP ExportTraceServiceRequest bytes into an index of views, without
// building pdata and without copying: names, attribute keys and string values stay in the
// request. The zero value is ready, with the default Limits.
//
// A Decoder is reused from request to request and keeps its tables: after the first few
// requests of a given size Decode allocates nothing. It keeps the largest tables it has needed
// (see Limits.MaxRequestBytes for the bound): drop the Decoder, or keep it in a sync.Pool, to
// give that memory back. It is not safe for concurrent use; use one per
// goroutine.
type Decoder struct {
	// Limits bounds what Decode accepts; the zero value means the defaults.
	Limits Limits
	// MigrateDeprecatedScopeSpans reads ResourceSpans field 1000 (the deprecated
	// instrumentation_library_spans) in place of scope_spans when scope_spans is absent, as
	// the OTLP receivers do (ptraceotlp.ExportRequest, the gRPC server). When false, those
	// spans are validated and ignored, as ptrace.ProtoUnmarshaler ignores them (the Kafka
	// receiver's path).
	MigrateDeprecatedScopeSpans bool

	buf    []byte
	ix     index
	nSpans int
}

// Decode reads one ExportTraceServiceRequest (TracesData has the same layout). On success
// the views (NumResources, Resource, ...) describe it until the next Decode, and read buf,
// which must not be modified meanwhile. On failure the error wraps ErrMalformed,
// ErrTooDeep or ErrTooLarge, and the Decoder holds an empty request.
//
// Decode accepts exactly the requests pdata's unmarshaler accepts, except those over the
// Limits, and yields the same values; the package doc lists the rules.
func (d *Decoder) Decode(buf []byte) error {
	d.ix.reset()
	d.buf, d.nSpans = nil, 0
	lim := d.Limits.resolved()
	if len(buf) > lim.MaxRequestBytes {
		return &DecodeError{Offset: lim.MaxRequestBytes, Reason: "longer than max_request_bytes", Kind: ErrTooLarge}
	}
	p := parser{ix: &d.ix, maxNesting: lim.MaxNesting, migrate: d.MigrateDeprecatedScopeSpans}
	if err := p.request(buf); err != nil {
		d.ix.reset()
		return err
	}
	d.buf = buf
	for i := range d.ix.scopes {
		d.nSpans += d.ix.scopes[i].spans.len()
	}
	return nil
}

// NumResources returns the number of ResourceSpans.
func (d *Decoder) NumResources() int { return len(d.ix.resources) }

// Resource returns the i-th ResourceSpans.
func (d *Decoder) Resource(i int) Resource { return Resource{d: d, r: &d.ix.resources[i]} }

// NumSpans returns the number of spans in the request, over all resources and scopes.
func (d *Decoder) NumSpans() int { return d.nSpans }

func (d *Decoder) bytes(r ref) []byte { return d.buf[r.off : r.off+r.n : r.off+r.n] }

func (d *Decoder) traceID(off uint32) (id [16]byte) {
	if off != 0 {
		copy(id[:], d.buf[off:])
	}
	return id
}

func (d *Decoder) spanID(off uint32) (id [8]byte) {
	if off != 0 {
		copy(id[:], d.buf[off:])
	}
	return id
}
