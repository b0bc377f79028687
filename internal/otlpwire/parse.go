package otlpwire // import "github.com/otelcol-red/otelcol-red/internal/otlpwire"

// The walk from ExportTraceServiceRequest down to spans, events and links, filling the
// index. Every message is read field by field in wire order, whatever that order is, with
// pdata's rules for repeated occurrences: a scalar or string is last-wins; an embedded
// message (Resource, InstrumentationScope, Status, a KeyValue's value) is merged into the
// previous occurrence, field by field; repeated fields append.
//
// Each loop reads a tag, lets its case set next to the position after the field (-1 when
// the field is refused; fieldError then says why), and returns at once the error of a
// nested message.

// parser carries the index being filled and the limits of one Decode.
type parser struct {
	ix         *index
	maxNesting int
	migrate    bool
}

func (p *parser) request(b []byte) error {
	for pos := 0; pos < len(b); {
		field, wire, next := readTag(b, pos)
		if next < 0 {
			return tagError(b, pos)
		}
		var err error
		if field != 1 {
			if pos, err = skipField(b, next, wire); err != nil {
				return err
			}
			continue
		}
		s, e := lenField(b, next, wire)
		if e < 0 {
			return fieldError(b, pos, requestSchema)
		}
		if err = p.resourceSpans(b[:e], s); err != nil {
			return err
		}
		pos = e
	}
	return nil
}

func (p *parser) resourceSpans(b []byte, pos int) (err error) {
	ix := p.ix
	rec := resourceRec{
		attrs:  rng{first: uint32(len(ix.resourceKVs))},
		scopes: rng{first: uint32(len(ix.scopes))},
	}
	var current, deprecated bool
	for pos < len(b) {
		field, wire, next := readTag(b, pos)
		if next < 0 {
			return tagError(b, pos)
		}
		switch field {
		case 1:
			s, e := lenField(b, next, wire)
			if e >= 0 {
				if err = p.resource(b[:e], s); err != nil {
					return err
				}
			}
			next = e
		case 2, 1000:
			s, e := lenField(b, next, wire)
			if e >= 0 {
				if err = p.scopeSpans(b[:e], s, field == 1000); err != nil {
					return err
				}
			}
			current, deprecated = current || field == 2, deprecated || field == 1000
			next = e
		case 3:
			_, next = lenField(b, next, wire)
		default:
			if next, err = skipField(b, next, wire); err != nil {
				return err
			}
		}
		if next < 0 {
			return fieldError(b, pos, resourceSpansSchema)
		}
		pos = next
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

func (p *parser) resource(b []byte, pos int) (err error) {
	for pos < len(b) {
		field, wire, next := readTag(b, pos)
		if next < 0 {
			return tagError(b, pos)
		}
		switch field {
		case 1:
			s, e := lenField(b, next, wire)
			if e >= 0 {
				if err = p.attribute(&p.ix.resourceKVs, b[:e], s); err != nil {
					return err
				}
			}
			next = e
		case 2:
			_, next = varintField(b, next, wire)
		case 3:
			s, e := lenField(b, next, wire)
			if e >= 0 {
				if err = entityRef(b[:e], s); err != nil {
					return err
				}
			}
			next = e
		default:
			if next, err = skipField(b, next, wire); err != nil {
				return err
			}
		}
		if next < 0 {
			return fieldError(b, pos, resourceSchema)
		}
		pos = next
	}
	return nil
}

// entityRef validates an EntityRef, which RED does not use.
func entityRef(b []byte, pos int) (err error) {
	for pos < len(b) {
		field, wire, next := readTag(b, pos)
		if next < 0 {
			return tagError(b, pos)
		}
		switch field {
		case 1, 2, 3, 4:
			_, next = lenField(b, next, wire)
		default:
			if next, err = skipField(b, next, wire); err != nil {
				return err
			}
		}
		if next < 0 {
			return fieldError(b, pos, entityRefSchema)
		}
		pos = next
	}
	return nil
}

func (p *parser) scopeSpans(b []byte, pos int, deprecated bool) (err error) {
	ix := p.ix
	rec := scopeRec{
		attrs:      rng{first: uint32(len(ix.scopeKVs))},
		spans:      rng{first: uint32(len(ix.spans))},
		deprecated: deprecated,
	}
	for pos < len(b) {
		field, wire, next := readTag(b, pos)
		if next < 0 {
			return tagError(b, pos)
		}
		switch field {
		case 1:
			s, e := lenField(b, next, wire)
			if e >= 0 {
				if err = p.scope(b[:e], s, &rec); err != nil {
					return err
				}
			}
			next = e
		case 2:
			s, e := lenField(b, next, wire)
			if e >= 0 {
				if err = p.span(b[:e], s); err != nil {
					return err
				}
			}
			next = e
		case 3:
			_, next = lenField(b, next, wire)
		default:
			if next, err = skipField(b, next, wire); err != nil {
				return err
			}
		}
		if next < 0 {
			return fieldError(b, pos, scopeSpansSchema)
		}
		pos = next
	}
	rec.attrs.end = uint32(len(ix.scopeKVs))
	rec.spans.end = uint32(len(ix.spans))
	ix.scopes = append(ix.scopes, rec)
	return nil
}

func (p *parser) scope(b []byte, pos int, rec *scopeRec) (err error) {
	for pos < len(b) {
		field, wire, next := readTag(b, pos)
		if next < 0 {
			return tagError(b, pos)
		}
		switch field {
		case 1:
			s, e := lenField(b, next, wire)
			rec.name, next = refOf(s, e), e
		case 2:
			s, e := lenField(b, next, wire)
			rec.version, next = refOf(s, e), e
		case 3:
			s, e := lenField(b, next, wire)
			if e >= 0 {
				if err = p.attribute(&p.ix.scopeKVs, b[:e], s); err != nil {
					return err
				}
			}
			next = e
		case 4:
			_, next = varintField(b, next, wire)
		default:
			if next, err = skipField(b, next, wire); err != nil {
				return err
			}
		}
		if next < 0 {
			return fieldError(b, pos, scopeSchema)
		}
		pos = next
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

func (p *parser) span(b []byte, pos int) (err error) {
	ix := p.ix
	rec := spanRec{
		attrs:  rng{first: uint32(len(ix.spanKVs))},
		events: rng{first: uint32(len(ix.events))},
		links:  rng{first: uint32(len(ix.links))},
	}
	for pos < len(b) {
		field, wire, next := readTag(b, pos)
		if next < 0 {
			return tagError(b, pos)
		}
		var v uint64
		switch field {
		case 1:
			rec.traceID, next = idField(b, next, wire, 16)
		case 2:
			rec.spanID, next = idField(b, next, wire, 8)
		case 3:
			s, e := lenField(b, next, wire)
			rec.traceState, next = refOf(s, e), e
		case 4:
			rec.parentID, next = idField(b, next, wire, 8)
		case 5:
			s, e := lenField(b, next, wire)
			rec.name, next = refOf(s, e), e
		case 6:
			v, next = varintField(b, next, wire)
			rec.kind = int32(v) // an enum is an int32: pdata truncates the varint
		case 7:
			rec.start, next = fixed64Field(b, next, wire)
		case 8:
			rec.end, next = fixed64Field(b, next, wire)
		case 9:
			s, e := lenField(b, next, wire)
			if e >= 0 {
				if err = p.attribute(&ix.spanKVs, b[:e], s); err != nil {
					return err
				}
			}
			next = e
		case 11:
			s, e := lenField(b, next, wire)
			if e >= 0 {
				if err = p.event(b[:e], s); err != nil {
					return err
				}
			}
			next = e
		case 13:
			s, e := lenField(b, next, wire)
			if e >= 0 {
				if err = p.link(b[:e], s); err != nil {
					return err
				}
			}
			next = e
		case 10, 12, 14: // dropped attributes, events, links counts
			_, next = varintField(b, next, wire)
		case 15:
			s, e := lenField(b, next, wire)
			if e >= 0 {
				if err = status(b[:e], s, &rec); err != nil {
					return err
				}
			}
			next = e
		case 16:
			rec.flags, next = fixed32Field(b, next, wire)
		default:
			if next, err = skipField(b, next, wire); err != nil {
				return err
			}
		}
		if next < 0 {
			return fieldError(b, pos, spanSchema)
		}
		pos = next
	}
	rec.attrs.end = uint32(len(ix.spanKVs))
	rec.events.end = uint32(len(ix.events))
	rec.links.end = uint32(len(ix.links))
	ix.spans = append(ix.spans, rec)
	return nil
}

// status merges a Status message into the span: a second Status field changes only the
// fields it carries, as pdata's unmarshaler does.
func status(b []byte, pos int, rec *spanRec) (err error) {
	for pos < len(b) {
		field, wire, next := readTag(b, pos)
		if next < 0 {
			return tagError(b, pos)
		}
		var v uint64
		switch field {
		case 2:
			s, e := lenField(b, next, wire)
			rec.statusMessage, next = refOf(s, e), e
		case 3:
			v, next = varintField(b, next, wire)
			rec.statusCode = int32(v)
		default: // field 1 is the deprecated code, unknown to pdata since v1
			if next, err = skipField(b, next, wire); err != nil {
				return err
			}
		}
		if next < 0 {
			return fieldError(b, pos, statusSchema)
		}
		pos = next
	}
	return nil
}

func (p *parser) event(b []byte, pos int) (err error) {
	ix := p.ix
	rec := eventRec{attrs: rng{first: uint32(len(ix.eventKVs))}}
	for pos < len(b) {
		field, wire, next := readTag(b, pos)
		if next < 0 {
			return tagError(b, pos)
		}
		switch field {
		case 1:
			rec.time, next = fixed64Field(b, next, wire)
		case 2:
			s, e := lenField(b, next, wire)
			rec.name, next = refOf(s, e), e
		case 3:
			s, e := lenField(b, next, wire)
			if e >= 0 {
				if err = p.attribute(&ix.eventKVs, b[:e], s); err != nil {
					return err
				}
			}
			next = e
		case 4:
			_, next = varintField(b, next, wire)
		default:
			if next, err = skipField(b, next, wire); err != nil {
				return err
			}
		}
		if next < 0 {
			return fieldError(b, pos, eventSchema)
		}
		pos = next
	}
	rec.attrs.end = uint32(len(ix.eventKVs))
	ix.events = append(ix.events, rec)
	return nil
}

func (p *parser) link(b []byte, pos int) (err error) {
	ix := p.ix
	rec := linkRec{attrs: rng{first: uint32(len(ix.linkKVs))}}
	for pos < len(b) {
		field, wire, next := readTag(b, pos)
		if next < 0 {
			return tagError(b, pos)
		}
		switch field {
		case 1:
			rec.traceID, next = idField(b, next, wire, 16)
		case 2:
			rec.spanID, next = idField(b, next, wire, 8)
		case 3:
			s, e := lenField(b, next, wire)
			rec.traceState, next = refOf(s, e), e
		case 4:
			s, e := lenField(b, next, wire)
			if e >= 0 {
				if err = p.attribute(&ix.linkKVs, b[:e], s); err != nil {
					return err
				}
			}
			next = e
		case 5:
			_, next = varintField(b, next, wire)
		case 6:
			rec.flags, next = fixed32Field(b, next, wire)
		default:
			if next, err = skipField(b, next, wire); err != nil {
				return err
			}
		}
		if next < 0 {
			return fieldError(b, pos, linkSchema)
		}
		pos = next
	}
	rec.attrs.end = uint32(len(ix.linkKVs))
	ix.links = append(ix.links, rec)
	return nil
}
