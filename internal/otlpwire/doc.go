// Package otlpwire reads OTLP trace requests (ExportTraceServiceRequest protobuf bytes, or
// TracesData, which has the same layout) without building pdata: it yields what RED metrics
// and the service graph need as views into the request's bytes.
//
//	var d otlpwire.Decoder
//	if err := d.Decode(body); err != nil { ... count the refusal by errors.Is ... }
//	for i := range d.NumResources() {
//		rs := d.Resource(i)
//		svc, _ := rs.Attributes().Get("service.name")
//		for j := range rs.NumScopes() {
//			sc := rs.Scope(j)
//			for k := range sc.NumSpans() {
//				sp := sc.Span(k) // Name, Kind, StatusCode, times, IDs, Attributes, Events, Links
//			}
//		}
//	}
//
// # Design
//
// Decode makes one pass over the bytes. It validates every field down to the leaves of
// nested attribute values, and appends small fixed-size records to flat tables: resources,
// scopes, spans, events, links, and one key-value table per kind of attribute owner. Records
// hold uint32 offsets into the request and no pointers, so the garbage collector never scans
// them, and the Decoder keeps the tables from request to request: in steady state a request
// costs no allocation (TestDecodeAllocations; BenchmarkDecode reports 0 allocs/op for a
// 1000-span request decoded and walked). Views (Resource, Scope, Span, Event, Link) are a
// Decoder pointer and a record pointer; Attributes is a sub-slice of a key-value table; a
// Value is the request and an offset, so string values, keys and names are never copied.
// Arrays and maps inside values are validated but not indexed: Slice and Map iterate over
// their bytes when asked, which RED never does on its hot path.
//
// Fields may come in any order (pdata's marshaler writes them in descending field-number
// order, most other producers ascending) and non-repeated fields may repeat. With one
// key-value table per owner kind, a span's attributes stay contiguous even when its events
// (whose attributes go to another table) come between them, and likewise for scopes and
// resources: every owner names its entries with one range, in a single pass.
//
// # Same verdicts and values as pdata
//
// Decode accepts exactly the requests ptrace.ProtoUnmarshaler (go.opentelemetry.io/collector/
// pdata v1.71.0) accepts, apart from the Limits below, and yields the same values. That is
// pdata's hand-written unmarshaler, not protobuf-go, and the differences matter:
//   - A known field with another wire type than its schema's is refused (protobuf-go would
//     skip it as unknown). Unknown fields of wire types 0, 1, 2 and 5 are skipped, 6 and 7
//     refused.
//   - Groups (wire types 3 and 4) are skipped as pdata skips them, which is not protobuf's
//     way: the skip ends at the first field inside the group that is not itself a group
//     tag, so the rest of the group is read as fields of the enclosing message; an unclosed
//     group is accepted, an end-group with nothing open refused, start and end numbers are
//     not compared, and an empty group ending exactly at the end of its message is refused.
//   - A varint may take ten bytes whatever the bits of the tenth; field numbers are the tag's
//     upper bits truncated to int32 (a huge tag can name a known field; 0 and negative are
//     refused); enums (kind, status code) are varints truncated to int32.
//   - Repeated occurrences of a non-repeated field: a scalar, string or ID is last-wins (an
//     empty ID resets it to zero); an embedded message (resource, scope, status) is merged,
//     field by field, its repeated fields appended (two resource fields give the attributes
//     of both). A KeyValue's value messages merge as one AnyValue whose oneof is replaced by
//     every oneof field seen, an array or map included (replaced, not merged); a value
//     message without a oneof field changes nothing.
//   - AnyValue field 8 (string_value_strindex, profiles only) is a oneof member that
//     pcommon.Value shows as an empty value: it yields ValueTypeEmpty.
//   - IDs must be empty or exactly 16 (trace) or 8 (span) bytes.
//   - Repeated keys are kept, in wire order; Get returns the first, as pcommon.Map.Get does.
//   - pdata's recursion limit (100 KeyValue, AnyValue, ArrayValue and KeyValueList messages
//     below an attribute) is applied exactly: it allows 49 nested arrays, 33 nested maps (the
//     innermost without values), and mixes in between.
//   - ResourceSpans field 1000 (the deprecated instrumentation_library_spans) is validated
//     and, like ptrace.ProtoUnmarshaler, ignored; with MigrateDeprecatedScopeSpans it is read
//     in place of an absent scope_spans, as ptraceotlp.ExportRequest and the OTLP gRPC server
//     do (the two pdata entry points differ here: the Kafka receiver uses the first, the
//     OTLP receivers the second).
//
// Value.AppendString renders a value as pcommon.Value.AsString does, byte for byte: numbers in
// JSON's notation with NaN and infinities spelled out, bytes in standard base64, arrays and
// maps as encoding/json writes the map[string]any / []any of AsRaw (keys sorted, a repeated
// key's last value kept, an empty bytes value as null, and the whole rendering empty when a
// double inside is NaN or infinite, where encoding/json fails and AsString ignores the error).
//
// The differential tests check all of this: a canonical dump of every field, produced once
// from pdata's Traces and once from the views, must be identical, or both must refuse, for
// pdata-marshalled requests, the same content re-encoded in ascending order with and without
// zero values, hand-made edge cases (one per rule above, and every known field of every
// message with every wrong wire type), every prefix and single-byte mutation of those, and
// whatever FuzzDecode makes of them.
//
// # Limits and refusals
//
// Limits bounds a request's size (MaxRequestBytes, default 64 MiB, above every stock
// receiver's default) and the nesting of arrays and maps in a value (MaxNesting, default 49,
// pdata's own maximum). Every error wraps one sentinel, so callers count refusals with
// errors.Is: ErrMalformed where pdata refuses too, ErrTooLarge and ErrTooDeep where the limit
// is ours. Hostile bytes get an error, never a panic; views of an accepted request cannot
// fail (a view that meets bytes it cannot read, which only a request modified after Decode
// can hold, panics with a BUG message rather than return a wrong value).
//
// Deliberate differences from pdata:
//   - ErrTooLarge: pdata has no size limit.
//   - ErrTooDeep: with MaxNesting below 49, values pdata accepts are refused. FuzzDecode
//     checks this with a decoder at MaxNesting 2: its ErrTooDeep refusals must be requests
//     the default decoder accepts, identically to pdata.
//   - Dropped-attribute, dropped-event and dropped-link counts, schema URLs, entity refs and
//     key_strindex are validated but not exposed: RED and the service graph do not use them.
//   - Memory: a Decoder keeps the largest tables it needed, at most ~90 bytes per request
//     byte (a request of empty spans, two bytes and an 88-byte record each; TestIndexMemory).
//     MaxRequestBytes bounds it; drop a Decoder, or pool it, to give the memory back.
//
// # Rejected designs
//
//   - Decoding lazily, validating only what is read: a request pdata refuses would be
//     accepted when its bad bytes lie in fields RED skips, and the views would need an error
//     path. One validating pass costs little more than the indexing it does anyway.
//   - protowire (google.golang.org/protobuf/encoding/protowire) or generated code
//     (vtprotobuf, gogo): their acceptance rules are protobuf's, not pdata's (wrong wire
//     types skipped, groups parsed properly, tenth varint bytes checked), so they disagree
//     with pdata on hostile bytes; generated code also allocates per message.
//   - One key-value table for all owners: with fields in any order, a span's attributes
//     would interleave with its events' and need a second pass or per-entry links.
//   - Copying keys and strings out of the request (or interning them): allocations per
//     span, which is what this package exists to avoid; callers copy what they keep.
//   - IDs stored as arrays in the records: 20 bytes more per span for what offsets say.
//   - iter.Seq iterators: a range-over-func body is a closure that may escape and allocate;
//     Len/At and Next/Value iterators never do.
package otlpwire // import "github.com/otelcol-red/otelcol-red/internal/otlpwire"
