package otlpwire // import "github.com/otelcol-red/otelcol-red/internal/otlpwire"

// Field readers for a tag already read (payload at next), and the schema that explains their
// failures. pdata refuses a known field whose wire type is not the one its schema declares
// (protobuf-go would skip it as unknown), so each reader checks the wire type first. Like the
// wire readers they return -1 for a refused field and leave the error to fieldError.

func lenField(b []byte, next, wire int) (start, end int) {
	if wire != wireLen {
		return 0, -1
	}
	return readLen(b, next)
}

func varintField(b []byte, next, wire int) (uint64, int) {
	if wire != wireVarint {
		return 0, -1
	}
	return readVarint(b, next)
}

func fixed64Field(b []byte, next, wire int) (uint64, int) {
	if wire != wireI64 {
		return 0, -1
	}
	return readFixed64(b, next)
}

func fixed32Field(b []byte, next, wire int) (uint32, int) {
	if wire != wireI32 {
		return 0, -1
	}
	return readFixed32(b, next)
}

// idField reads an ID field: empty stands for the all-zero ID (offset 0), otherwise it must
// be exactly size bytes, as pdata's TraceID and SpanID require.
func idField(b []byte, next, wire, size int) (off uint32, end int) {
	start, end := lenField(b, next, wire)
	switch {
	case end < 0:
		return 0, -1
	case end == start:
		return 0, end
	case end-start == size:
		return uint32(start), end
	}
	return 0, -1
}

func refOf(start, end int) ref { return ref{off: uint32(start), n: uint32(end - start)} }

// fieldInfo describes a known field for error messages.
type fieldInfo struct {
	name   string
	wire   int
	idSize int // 16 or 8 for trace and span IDs
}

// schema maps a message's known field numbers to their descriptions.
type schema map[int32]fieldInfo

// fieldError explains why the known field whose tag is at pos was refused: its wire type,
// its payload, or an ID's length.
func fieldError(b []byte, pos int, s schema) error {
	field, wire, next := readTag(b, pos)
	f := s[field]
	if wire != f.wire {
		return malformed(pos, "wrong wire type for "+f.name)
	}
	if f.idSize != 0 {
		if start, end := readLen(b, next); end >= 0 {
			return malformed(start, f.name+" of the wrong length")
		}
	}
	return payloadError(b, next, wire)
}

func lenInfo(name string) fieldInfo    { return fieldInfo{name: name, wire: wireLen} }
func varintInfo(name string) fieldInfo { return fieldInfo{name: name, wire: wireVarint} }

var (
	requestSchema       = schema{1: lenInfo("ExportTraceServiceRequest.resource_spans")}
	resourceSpansSchema = schema{1: lenInfo("ResourceSpans.resource"), 2: lenInfo("ResourceSpans.scope_spans"),
		3: lenInfo("ResourceSpans.schema_url"), 1000: lenInfo("ResourceSpans.deprecated_scope_spans")}
	resourceSchema = schema{1: lenInfo("Resource.attributes"), 2: varintInfo("Resource.dropped_attributes_count"),
		3: lenInfo("Resource.entity_refs")}
	entityRefSchema = schema{1: lenInfo("EntityRef.schema_url"), 2: lenInfo("EntityRef.type"),
		3: lenInfo("EntityRef.id_keys"), 4: lenInfo("EntityRef.description_keys")}
	scopeSpansSchema = schema{1: lenInfo("ScopeSpans.scope"), 2: lenInfo("ScopeSpans.spans"),
		3: lenInfo("ScopeSpans.schema_url")}
	scopeSchema = schema{1: lenInfo("InstrumentationScope.name"), 2: lenInfo("InstrumentationScope.version"),
		3: lenInfo("InstrumentationScope.attributes"), 4: varintInfo("InstrumentationScope.dropped_attributes_count")}
	spanSchema = schema{
		1: {name: "Span.trace_id", wire: wireLen, idSize: 16}, 2: {name: "Span.span_id", wire: wireLen, idSize: 8},
		3: lenInfo("Span.trace_state"), 4: {name: "Span.parent_span_id", wire: wireLen, idSize: 8},
		5: lenInfo("Span.name"), 6: varintInfo("Span.kind"),
		7: {name: "Span.start_time_unix_nano", wire: wireI64}, 8: {name: "Span.end_time_unix_nano", wire: wireI64},
		9: lenInfo("Span.attributes"), 10: varintInfo("Span.dropped_attributes_count"), 11: lenInfo("Span.events"),
		12: varintInfo("Span.dropped_events_count"), 13: lenInfo("Span.links"),
		14: varintInfo("Span.dropped_links_count"), 15: lenInfo("Span.status"), 16: {name: "Span.flags", wire: wireI32}}
	statusSchema = schema{2: lenInfo("Status.message"), 3: varintInfo("Status.code")}
	eventSchema  = schema{1: {name: "Span.Event.time_unix_nano", wire: wireI64}, 2: lenInfo("Span.Event.name"),
		3: lenInfo("Span.Event.attributes"), 4: varintInfo("Span.Event.dropped_attributes_count")}
	linkSchema = schema{1: {name: "Span.Link.trace_id", wire: wireLen, idSize: 16},
		2: {name: "Span.Link.span_id", wire: wireLen, idSize: 8}, 3: lenInfo("Span.Link.trace_state"),
		4: lenInfo("Span.Link.attributes"), 5: varintInfo("Span.Link.dropped_attributes_count"),
		6: {name: "Span.Link.flags", wire: wireI32}}
	keyValueSchema = schema{1: lenInfo("KeyValue.key"), 2: lenInfo("KeyValue.value"), 3: varintInfo("KeyValue.key_strindex")}
	anyValueSchema = schema{1: lenInfo("AnyValue.string_value"), 2: varintInfo("AnyValue.bool_value"),
		3: varintInfo("AnyValue.int_value"), 4: {name: "AnyValue.double_value", wire: wireI64},
		5: lenInfo("AnyValue.array_value"), 6: lenInfo("AnyValue.kvlist_value"), 7: lenInfo("AnyValue.bytes_value"),
		8: varintInfo("AnyValue.string_value_strindex")}
	arrayValueSchema   = schema{1: lenInfo("ArrayValue.values")}
	keyValueListSchema = schema{1: lenInfo("KeyValueList.values")}
)
