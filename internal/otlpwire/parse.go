package otlpwire // import "github.com/otelcol-red/otelcol-red/internal/otlpwire"

// The walk from ExportTraceServiceRequest down to spans, events and links, filling the
// index. Every message is read field by field in wire order, whatever that order is, with
// pdata's rules for repeated occurrences: a scalar or string is last-wins; an embedded
// message (Resource, InstrumentationScope, Status, a KeyValue's value) is merged into the
// previous occurrence, field by field; repeated fields append.

// parser carries the index being filled and the limits of one Decode.
type parser struct {
	ix         *index
	maxNesting int
	migrate    bool
}

func (p *parser) request(b []byte) error {
	for pos := 0; pos < len(b); {
		field, wire, next, err := readTag(b, pos)
		if err != nil {
			return err
		}
		if field != 1 {
			if pos, err = skipField(b, next, wire); err != nil {
				return err
			}
			continue
		}
		s, e, err := lenField(b, pos, next, wire, "ExportTraceServiceRequest.resource_spans")
		if err != nil {
			return err
		}
		if err = p.resourceSpans(b[:e], s); err != nil {
			return err
		}
		pos = e
	}
	return nil
}

func (p *parser) resourceSpans(b []byte, pos int) error {
	ix := p.ix
	rec := resourceRec{
		attrs:  rng{first: uint32(len(ix.resourceKVs))},
		scopes: rng{first: uint32(len(ix.scopes))},
	}
	var current, deprecated bool
	for pos < len(b) {
		field, wire, next, err := readTag(b, pos)
		if err != nil {
			return err
		}
		var s, e int
		switch field {
		case 1:
			if s, e, err = lenField(b, pos, next, wire, "ResourceSpans.resource"); err == nil {
				err, pos = p.resource(b[:e], s), e
			}
		case 2:
			if s, e, err = lenField(b, pos, next, wire, "ResourceSpans.scope_spans"); err == nil {
				err, pos = p.scopeSpans(b[:e], s, false), e
				current = true
			}
		case 3:
			_, pos, err = lenField(b, pos, next, wire, "ResourceSpans.schema_url")
		case 1000:
			if s, e, err = lenField(b, pos, next, wire, "ResourceSpans.deprecated_scope_spans"); err == nil {
				err, pos = p.scopeSpans(b[:e], s, true), e
				deprecated = true
			}
		default:
			pos, err = skipField(b, next, wire)
		}
		if err != nil {
			return err
		}
	}
	if deprecated && (current || !p.migrate) {
		// pdata keeps field 1000 apart and only a migrating reader puts it in place of an
		// absent field 2: drop those scopes (their spans stay in the table, unreferenced).
		kept := ix.scopes[:rec.scopes.first]
		for _, sc := range ix.scopes[rec.scopes.first:] {
			if !sc.deprecated {
				kept = append(kept, sc)
			}
		}
		ix.scopes = kept
	}
	rec.attrs.end = uint32(len(ix.resourceKVs))
	rec.scopes.end = uint32(len(ix.scopes))
	ix.resources = append(ix.resources, rec)
	return nil
}

func (p *parser) resource(b []byte, pos int) error {
	for pos < len(b) {
		field, wire, next, err := readTag(b, pos)
		if err != nil {
			return err
		}
		var s, e int
		switch field {
		case 1:
			if s, e, err = lenField(b, pos, next, wire, "Resource.attributes"); err == nil {
				err, pos = p.attribute(&p.ix.resourceKVs, b[:e], s), e
			}
		case 2:
			_, pos, err = varintField(b, pos, next, wire, "Resource.dropped_attributes_count")
		case 3:
			if s, e, err = lenField(b, pos, next, wire, "Resource.entity_refs"); err == nil {
				err, pos = entityRef(b[:e], s), e
			}
		default:
			pos, err = skipField(b, next, wire)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// entityRef validates an EntityRef, which RED does not use.
func entityRef(b []byte, pos int) error {
	for pos < len(b) {
		field, wire, next, err := readTag(b, pos)
		if err != nil {
			return err
		}
		switch field {
		case 1, 2, 3, 4:
			_, pos, err = lenField(b, pos, next, wire, "EntityRef")
		default:
			pos, err = skipField(b, next, wire)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) scopeSpans(b []byte, pos int, deprecated bool) error {
	ix := p.ix
	rec := scopeRec{
		attrs:      rng{first: uint32(len(ix.scopeKVs))},
		spans:      rng{first: uint32(len(ix.spans))},
		deprecated: deprecated,
	}
	for pos < len(b) {
		field, wire, next, err := readTag(b, pos)
		if err != nil {
			return err
		}
		var s, e int
		switch field {
		case 1:
			if s, e, err = lenField(b, pos, next, wire, "ScopeSpans.scope"); err == nil {
				err, pos = p.scope(b[:e], s, &rec), e
			}
		case 2:
			if s, e, err = lenField(b, pos, next, wire, "ScopeSpans.spans"); err == nil {
				err, pos = p.span(b[:e], s), e
			}
		case 3:
			_, pos, err = lenField(b, pos, next, wire, "ScopeSpans.schema_url")
		default:
			pos, err = skipField(b, next, wire)
		}
		if err != nil {
			return err
		}
	}
	rec.attrs.end = uint32(len(ix.scopeKVs))
	rec.spans.end = uint32(len(ix.spans))
	ix.scopes = append(ix.scopes, rec)
	return nil
}

func (p *parser) scope(b []byte, pos int, rec *scopeRec) error {
	for pos < len(b) {
		field, wire, next, err := readTag(b, pos)
		if err != nil {
			return err
		}
		var s, e int
		switch field {
		case 1:
			if s, e, err = lenField(b, pos, next, wire, "InstrumentationScope.name"); err == nil {
				rec.name, pos = refOf(s, e), e
			}
		case 2:
			if s, e, err = lenField(b, pos, next, wire, "InstrumentationScope.version"); err == nil {
				rec.version, pos = refOf(s, e), e
			}
		case 3:
			if s, e, err = lenField(b, pos, next, wire, "InstrumentationScope.attributes"); err == nil {
				err, pos = p.attribute(&p.ix.scopeKVs, b[:e], s), e
			}
		case 4:
			_, pos, err = varintField(b, pos, next, wire, "InstrumentationScope.dropped_attributes_count")
		default:
			pos, err = skipField(b, next, wire)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// attribute validates one attribute KeyValue and appends it to the owner's table.
func (p *parser) attribute(table *[]kvRec, b []byte, pos int) error {
	kv, err := parseAttribute(b, pos, p.maxNesting)
	if err != nil {
		return err
	}
	*table = append(*table, kv)
	return nil
}

func (p *parser) span(b []byte, pos int) error {
	ix := p.ix
	rec := spanRec{
		attrs:  rng{first: uint32(len(ix.spanKVs))},
		events: rng{first: uint32(len(ix.events))},
		links:  rng{first: uint32(len(ix.links))},
	}
	for pos < len(b) {
		field, wire, next, err := readTag(b, pos)
		if err != nil {
			return err
		}
		var s, e int
		var v uint64
		switch field {
		case 1:
			if s, e, err = lenField(b, pos, next, wire, "Span.trace_id"); err == nil {
				rec.traceID, err = idField(s, e, 16, "Span.trace_id")
				pos = e
			}
		case 2:
			if s, e, err = lenField(b, pos, next, wire, "Span.span_id"); err == nil {
				rec.spanID, err = idField(s, e, 8, "Span.span_id")
				pos = e
			}
		case 3:
			if s, e, err = lenField(b, pos, next, wire, "Span.trace_state"); err == nil {
				rec.traceState, pos = refOf(s, e), e
			}
		case 4:
			if s, e, err = lenField(b, pos, next, wire, "Span.parent_span_id"); err == nil {
				rec.parentID, err = idField(s, e, 8, "Span.parent_span_id")
				pos = e
			}
		case 5:
			if s, e, err = lenField(b, pos, next, wire, "Span.name"); err == nil {
				rec.name, pos = refOf(s, e), e
			}
		case 6:
			v, pos, err = varintField(b, pos, next, wire, "Span.kind")
			rec.kind = int32(v) // an enum is an int32: pdata truncates the varint
		case 7:
			rec.start, pos, err = fixed64Field(b, pos, next, wire, "Span.start_time_unix_nano")
		case 8:
			rec.end, pos, err = fixed64Field(b, pos, next, wire, "Span.end_time_unix_nano")
		case 9:
			if s, e, err = lenField(b, pos, next, wire, "Span.attributes"); err == nil {
				err, pos = p.attribute(&ix.spanKVs, b[:e], s), e
			}
		case 11:
			if s, e, err = lenField(b, pos, next, wire, "Span.events"); err == nil {
				err, pos = p.event(b[:e], s), e
			}
		case 13:
			if s, e, err = lenField(b, pos, next, wire, "Span.links"); err == nil {
				err, pos = p.link(b[:e], s), e
			}
		case 10, 12, 14: // dropped attributes, events, links counts
			_, pos, err = varintField(b, pos, next, wire, "Span.dropped_count")
		case 15:
			if s, e, err = lenField(b, pos, next, wire, "Span.status"); err == nil {
				err, pos = status(b[:e], s, &rec), e
			}
		case 16:
			rec.flags, pos, err = fixed32Field(b, pos, next, wire, "Span.flags")
		default:
			pos, err = skipField(b, next, wire)
		}
		if err != nil {
			return err
		}
	}
	rec.attrs.end = uint32(len(ix.spanKVs))
	rec.events.end = uint32(len(ix.events))
	rec.links.end = uint32(len(ix.links))
	ix.spans = append(ix.spans, rec)
	return nil
}

// status merges a Status message into the span: a second Status field changes only the
// fields it carries, as pdata's unmarshaler does.
func status(b []byte, pos int, rec *spanRec) error {
	for pos < len(b) {
		field, wire, next, err := readTag(b, pos)
		if err != nil {
			return err
		}
		var s, e int
		var v uint64
		switch field {
		case 2:
			if s, e, err = lenField(b, pos, next, wire, "Status.message"); err == nil {
				rec.statusMessage, pos = refOf(s, e), e
			}
		case 3:
			v, pos, err = varintField(b, pos, next, wire, "Status.code")
			rec.statusCode = int32(v)
		default: // field 1 is the deprecated code, unknown to pdata since v1
			pos, err = skipField(b, next, wire)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) event(b []byte, pos int) error {
	ix := p.ix
	rec := eventRec{attrs: rng{first: uint32(len(ix.eventKVs))}}
	for pos < len(b) {
		field, wire, next, err := readTag(b, pos)
		if err != nil {
			return err
		}
		var s, e int
		switch field {
		case 1:
			rec.time, pos, err = fixed64Field(b, pos, next, wire, "Span.Event.time_unix_nano")
		case 2:
			if s, e, err = lenField(b, pos, next, wire, "Span.Event.name"); err == nil {
				rec.name, pos = refOf(s, e), e
			}
		case 3:
			if s, e, err = lenField(b, pos, next, wire, "Span.Event.attributes"); err == nil {
				err, pos = p.attribute(&ix.eventKVs, b[:e], s), e
			}
		case 4:
			_, pos, err = varintField(b, pos, next, wire, "Span.Event.dropped_attributes_count")
		default:
			pos, err = skipField(b, next, wire)
		}
		if err != nil {
			return err
		}
	}
	rec.attrs.end = uint32(len(ix.eventKVs))
	ix.events = append(ix.events, rec)
	return nil
}

func (p *parser) link(b []byte, pos int) error {
	ix := p.ix
	rec := linkRec{attrs: rng{first: uint32(len(ix.linkKVs))}}
	for pos < len(b) {
		field, wire, next, err := readTag(b, pos)
		if err != nil {
			return err
		}
		var s, e int
		switch field {
		case 1:
			if s, e, err = lenField(b, pos, next, wire, "Span.Link.trace_id"); err == nil {
				rec.traceID, err = idField(s, e, 16, "Span.Link.trace_id")
				pos = e
			}
		case 2:
			if s, e, err = lenField(b, pos, next, wire, "Span.Link.span_id"); err == nil {
				rec.spanID, err = idField(s, e, 8, "Span.Link.span_id")
				pos = e
			}
		case 3:
			if s, e, err = lenField(b, pos, next, wire, "Span.Link.trace_state"); err == nil {
				rec.traceState, pos = refOf(s, e), e
			}
		case 4:
			if s, e, err = lenField(b, pos, next, wire, "Span.Link.attributes"); err == nil {
				err, pos = p.attribute(&ix.linkKVs, b[:e], s), e
			}
		case 5:
			_, pos, err = varintField(b, pos, next, wire, "Span.Link.dropped_attributes_count")
		case 6:
			rec.flags, pos, err = fixed32Field(b, pos, next, wire, "Span.Link.flags")
		default:
			pos, err = skipField(b, next, wire)
		}
		if err != nil {
			return err
		}
	}
	rec.attrs.end = uint32(len(ix.linkKVs))
	ix.links = append(ix.links, rec)
	return nil
}
