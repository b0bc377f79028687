// Package otlpwiretest encodes OTLP trace requests for tests: the primitives of the protobuf
// wire format, and the ascending-order encoding of a ptrace.Traces (what producers other than
// pdata write: fields in field-number order). It is the tests' second encoder beside pdata's
// marshaler, so that a reader of OTLP bytes is checked against both field orders.
package otlpwiretest // import "github.com/otelcol-red/otelcol-red/internal/otlpwire/otlpwiretest"

import (
	"encoding/binary"
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The protobuf wire types.
const (
	WireVarint = 0
	WireI64    = 1
	WireLen    = 2
	WireI32    = 5
)

// Varint appends v as a varint.
func Varint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// Tag appends the tag of a field with the given number and wire type.
func Tag(b []byte, field, wire int) []byte { return Varint(b, uint64(field)<<3|uint64(wire)) }

// Bytes appends a length-delimited field.
func Bytes(b []byte, field int, p []byte) []byte {
	b = Tag(b, field, WireLen)
	b = Varint(b, uint64(len(p)))
	return append(b, p...)
}

// String appends a string field.
func String(b []byte, field int, s string) []byte { return Bytes(b, field, []byte(s)) }

// Uint appends a varint field.
func Uint(b []byte, field int, v uint64) []byte { return Varint(Tag(b, field, WireVarint), v) }

// Fixed64 appends a fixed 64-bit field.
func Fixed64(b []byte, field int, v uint64) []byte {
	return binary.LittleEndian.AppendUint64(Tag(b, field, WireI64), v)
}

// Fixed32 appends a fixed 32-bit field.
func Fixed32(b []byte, field int, v uint32) []byte {
	return binary.LittleEndian.AppendUint32(Tag(b, field, WireI32), v)
}

// Msg appends an embedded message whose payload body writes.
// Msg appends an embedded message whose payload body writes.
func Msg(b []byte, field int, body func([]byte) []byte) []byte { return Bytes(b, field, body(nil)) }

// Ascending returns td encoded as an ExportTraceServiceRequest with every message's fields in
// ascending field-number order, the order of most producers other than pdata (whose marshaler
// writes them in descending order). Fields equal to their zero value are left out, as proto3
// encoders usually do.
func Ascending(td ptrace.Traces) []byte { return ascending{}.traces(td) }

// AscendingWithZeros is Ascending writing scalar and string fields equal to their zero value
// too (an encoder may write them).
func AscendingWithZeros(td ptrace.Traces) []byte { return ascending{zeros: true}.traces(td) }

type ascending struct{ zeros, unknown bool }

// AscendingWithUnknownFields is Ascending with fields no OTLP message defines (numbers 90 to
// 93, one of each wire type) at the start of every message, the request included: what a
// newer producer's schema adds, and every reader must skip.
func AscendingWithUnknownFields(td ptrace.Traces) []byte {
	a := ascending{unknown: true}
	return a.unknownFields(a.traces(td))
}

// msg is Msg, with the unknown fields first when a writes them.
func (a ascending) msg(b []byte, field int, body func([]byte) []byte) []byte {
	if !a.unknown {
		return Msg(b, field, body)
	}
	return Msg(b, field, func(b []byte) []byte { return body(a.unknownFields(b)) })
}

func (a ascending) unknownFields(b []byte) []byte {
	b = Uint(b, 90, 1<<40)
	b = String(b, 91, "unknown")
	b = Fixed32(b, 92, 7)
	return Fixed64(b, 93, 9)
}

func (a ascending) traces(td ptrace.Traces) []byte {
	var b []byte
	for _, rs := range td.ResourceSpans().All() {
		b = a.msg(b, 1, func(b []byte) []byte {
			b = a.msg(b, 1, func(b []byte) []byte {
				b = a.attrs(b, 1, rs.Resource().Attributes())
				return a.uint(b, 2, uint64(rs.Resource().DroppedAttributesCount()))
			})
			for _, ss := range rs.ScopeSpans().All() {
				b = a.msg(b, 2, func(b []byte) []byte { return a.scopeSpans(b, ss) })
			}
			return a.str(b, 3, rs.SchemaUrl())
		})
	}
	return b
}

func (a ascending) scopeSpans(b []byte, ss ptrace.ScopeSpans) []byte {
	b = a.msg(b, 1, func(b []byte) []byte {
		sc := ss.Scope()
		b = a.str(b, 1, sc.Name())
		b = a.str(b, 2, sc.Version())
		b = a.attrs(b, 3, sc.Attributes())
		return a.uint(b, 4, uint64(sc.DroppedAttributesCount()))
	})
	for _, sp := range ss.Spans().All() {
		b = a.msg(b, 2, func(b []byte) []byte { return a.span(b, sp) })
	}
	return a.str(b, 3, ss.SchemaUrl())
}

func (a ascending) span(b []byte, sp ptrace.Span) []byte {
	tid, sid, pid := sp.TraceID(), sp.SpanID(), sp.ParentSpanID()
	b = a.id(b, 1, tid[:], tid.IsEmpty())
	b = a.id(b, 2, sid[:], sid.IsEmpty())
	b = a.str(b, 3, sp.TraceState().AsRaw())
	b = a.id(b, 4, pid[:], pid.IsEmpty())
	b = a.str(b, 5, sp.Name())
	b = a.uint(b, 6, uint64(int64(sp.Kind())))
	b = a.fixed64(b, 7, uint64(sp.StartTimestamp()))
	b = a.fixed64(b, 8, uint64(sp.EndTimestamp()))
	b = a.attrs(b, 9, sp.Attributes())
	b = a.uint(b, 10, uint64(sp.DroppedAttributesCount()))
	for _, ev := range sp.Events().All() {
		b = a.msg(b, 11, func(b []byte) []byte {
			b = a.fixed64(b, 1, uint64(ev.Timestamp()))
			b = a.str(b, 2, ev.Name())
			b = a.attrs(b, 3, ev.Attributes())
			return a.uint(b, 4, uint64(ev.DroppedAttributesCount()))
		})
	}
	b = a.uint(b, 12, uint64(sp.DroppedEventsCount()))
	for _, l := range sp.Links().All() {
		b = a.msg(b, 13, func(b []byte) []byte {
			ltid, lsid := l.TraceID(), l.SpanID()
			b = a.id(b, 1, ltid[:], ltid.IsEmpty())
			b = a.id(b, 2, lsid[:], lsid.IsEmpty())
			b = a.str(b, 3, l.TraceState().AsRaw())
			b = a.attrs(b, 4, l.Attributes())
			b = a.uint(b, 5, uint64(l.DroppedAttributesCount()))
			return a.fixed32(b, 6, l.Flags())
		})
	}
	b = a.uint(b, 14, uint64(sp.DroppedLinksCount()))
	st := sp.Status()
	if a.zeros || st.Message() != "" || st.Code() != 0 {
		b = a.msg(b, 15, func(b []byte) []byte {
			b = a.str(b, 2, st.Message())
			return a.uint(b, 3, uint64(int64(st.Code())))
		})
	}
	return a.fixed32(b, 16, sp.Flags())
}

func (a ascending) attrs(b []byte, field int, m pcommon.Map) []byte {
	for k, v := range m.All() {
		b = a.msg(b, field, func(b []byte) []byte { return a.keyValue(b, k, v) })
	}
	return b
}

func (a ascending) keyValue(b []byte, k string, v pcommon.Value) []byte {
	b = a.str(b, 1, k)
	return a.msg(b, 2, func(b []byte) []byte { return a.anyValue(b, v) })
}

func (a ascending) anyValue(b []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return String(b, 1, v.Str()) // always written: it tells Str "" from Empty
	case pcommon.ValueTypeBool:
		x := uint64(0)
		if v.Bool() {
			x = 1
		}
		return Uint(b, 2, x)
	case pcommon.ValueTypeInt:
		return Uint(b, 3, uint64(v.Int()))
	case pcommon.ValueTypeDouble:
		return Fixed64(b, 4, math.Float64bits(v.Double()))
	case pcommon.ValueTypeSlice:
		return a.msg(b, 5, func(b []byte) []byte {
			for _, e := range v.Slice().All() {
				b = a.msg(b, 1, func(b []byte) []byte { return a.anyValue(b, e) })
			}
			return b
		})
	case pcommon.ValueTypeMap:
		return a.msg(b, 6, func(b []byte) []byte {
			for k, e := range v.Map().All() {
				b = a.msg(b, 1, func(b []byte) []byte { return a.keyValue(b, k, e) })
			}
			return b
		})
	case pcommon.ValueTypeBytes:
		return Bytes(b, 7, v.Bytes().AsRaw())
	}
	return b
}

func (a ascending) id(b []byte, field int, id []byte, empty bool) []byte {
	if empty && !a.zeros {
		return b
	}
	if empty {
		return Bytes(b, field, nil)
	}
	return Bytes(b, field, id)
}

func (a ascending) str(b []byte, field int, s string) []byte {
	if s == "" && !a.zeros {
		return b
	}
	return String(b, field, s)
}

func (a ascending) uint(b []byte, field int, v uint64) []byte {
	if v == 0 && !a.zeros {
		return b
	}
	return Uint(b, field, v)
}

func (a ascending) fixed64(b []byte, field int, v uint64) []byte {
	if v == 0 && !a.zeros {
		return b
	}
	return Fixed64(b, field, v)
}

func (a ascending) fixed32(b []byte, field int, v uint32) []byte {
	if v == 0 && !a.zeros {
		return b
	}
	return Fixed32(b, field, v)
}
