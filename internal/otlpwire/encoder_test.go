package otlpwire

import (
	"encoding/binary"
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// A small protobuf writer for the tests: the ascending-order encoding of a ptrace.Traces
// (what producers other than pdata write: fields in field-number order), and the primitives
// the hand-made cases are built from.

func pbVarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func pbTag(b []byte, field, wire int) []byte { return pbVarint(b, uint64(field)<<3|uint64(wire)) }

func pbBytes(b []byte, field int, p []byte) []byte {
	b = pbTag(b, field, wireLen)
	b = pbVarint(b, uint64(len(p)))
	return append(b, p...)
}

func pbString(b []byte, field int, s string) []byte { return pbBytes(b, field, []byte(s)) }

func pbUint(b []byte, field int, v uint64) []byte { return pbVarint(pbTag(b, field, wireVarint), v) }

func pbFixed64(b []byte, field int, v uint64) []byte {
	return binary.LittleEndian.AppendUint64(pbTag(b, field, wireI64), v)
}

func pbFixed32(b []byte, field int, v uint32) []byte {
	return binary.LittleEndian.AppendUint32(pbTag(b, field, wireI32), v)
}

// pbMsg appends an embedded message whose payload body writes.
func pbMsg(b []byte, field int, body func([]byte) []byte) []byte { return pbBytes(b, field, body(nil)) }

// ascending encodes td with every message's fields in ascending field-number order. With
// zeros, scalar and string fields equal to their zero value are written too (an encoder may
// write them; proto3 encoders usually do not).
type ascending struct{ zeros bool }

func (a ascending) traces(td ptrace.Traces) []byte {
	var b []byte
	for _, rs := range td.ResourceSpans().All() {
		b = pbMsg(b, 1, func(b []byte) []byte {
			b = pbMsg(b, 1, func(b []byte) []byte {
				b = a.attrs(b, 1, rs.Resource().Attributes())
				return a.uint(b, 2, uint64(rs.Resource().DroppedAttributesCount()))
			})
			for _, ss := range rs.ScopeSpans().All() {
				b = pbMsg(b, 2, func(b []byte) []byte { return a.scopeSpans(b, ss) })
			}
			return a.str(b, 3, rs.SchemaUrl())
		})
	}
	return b
}

func (a ascending) scopeSpans(b []byte, ss ptrace.ScopeSpans) []byte {
	b = pbMsg(b, 1, func(b []byte) []byte {
		sc := ss.Scope()
		b = a.str(b, 1, sc.Name())
		b = a.str(b, 2, sc.Version())
		b = a.attrs(b, 3, sc.Attributes())
		return a.uint(b, 4, uint64(sc.DroppedAttributesCount()))
	})
	for _, sp := range ss.Spans().All() {
		b = pbMsg(b, 2, func(b []byte) []byte { return a.span(b, sp) })
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
		b = pbMsg(b, 11, func(b []byte) []byte {
			b = a.fixed64(b, 1, uint64(ev.Timestamp()))
			b = a.str(b, 2, ev.Name())
			b = a.attrs(b, 3, ev.Attributes())
			return a.uint(b, 4, uint64(ev.DroppedAttributesCount()))
		})
	}
	b = a.uint(b, 12, uint64(sp.DroppedEventsCount()))
	for _, l := range sp.Links().All() {
		b = pbMsg(b, 13, func(b []byte) []byte {
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
		b = pbMsg(b, 15, func(b []byte) []byte {
			b = a.str(b, 2, st.Message())
			return a.uint(b, 3, uint64(int64(st.Code())))
		})
	}
	return a.fixed32(b, 16, sp.Flags())
}

func (a ascending) attrs(b []byte, field int, m pcommon.Map) []byte {
	for k, v := range m.All() {
		b = pbMsg(b, field, func(b []byte) []byte { return a.keyValue(b, k, v) })
	}
	return b
}

func (a ascending) keyValue(b []byte, k string, v pcommon.Value) []byte {
	b = a.str(b, 1, k)
	return pbMsg(b, 2, func(b []byte) []byte { return a.anyValue(b, v) })
}

func (a ascending) anyValue(b []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return pbString(b, 1, v.Str()) // always written: it tells Str "" from Empty
	case pcommon.ValueTypeBool:
		x := uint64(0)
		if v.Bool() {
			x = 1
		}
		return pbUint(b, 2, x)
	case pcommon.ValueTypeInt:
		return pbUint(b, 3, uint64(v.Int()))
	case pcommon.ValueTypeDouble:
		return pbFixed64(b, 4, math.Float64bits(v.Double()))
	case pcommon.ValueTypeSlice:
		return pbMsg(b, 5, func(b []byte) []byte {
			for _, e := range v.Slice().All() {
				b = pbMsg(b, 1, func(b []byte) []byte { return a.anyValue(b, e) })
			}
			return b
		})
	case pcommon.ValueTypeMap:
		return pbMsg(b, 6, func(b []byte) []byte {
			for k, e := range v.Map().All() {
				b = pbMsg(b, 1, func(b []byte) []byte { return a.keyValue(b, k, e) })
			}
			return b
		})
	case pcommon.ValueTypeBytes:
		return pbBytes(b, 7, v.Bytes().AsRaw())
	}
	return b
}

func (a ascending) id(b []byte, field int, id []byte, empty bool) []byte {
	if empty && !a.zeros {
		return b
	}
	if empty {
		return pbBytes(b, field, nil)
	}
	return pbBytes(b, field, id)
}

func (a ascending) str(b []byte, field int, s string) []byte {
	if s == "" && !a.zeros {
		return b
	}
	return pbString(b, field, s)
}

func (a ascending) uint(b []byte, field int, v uint64) []byte {
	if v == 0 && !a.zeros {
		return b
	}
	return pbUint(b, field, v)
}

func (a ascending) fixed64(b []byte, field int, v uint64) []byte {
	if v == 0 && !a.zeros {
		return b
	}
	return pbFixed64(b, field, v)
}

func (a ascending) fixed32(b []byte, field int, v uint32) []byte {
	if v == 0 && !a.zeros {
		return b
	}
	return pbFixed32(b, field, v)
}
