package otlpwire

import (
	"encoding/hex"
	"fmt"
	"math"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The canonical dump: every field the decoder yields, written once from pdata's decoded
// Traces and once from the decoder's views, in the same text form. The differential tests
// compare the two strings. Each attribute line carries its key, its type, AsString, the
// value pdata's Get (first match) returns for that key, and the value's full structure
// (arrays and maps element by element, repeated keys included, doubles as bits).

type dumper struct{ strings.Builder }

func (w *dumper) line(depth int, format string, args ...any) {
	w.WriteString(strings.Repeat("  ", depth))
	fmt.Fprintf(w, format, args...)
	w.WriteByte('\n')
}

func dumpPdata(td ptrace.Traces) string {
	var w dumper
	for _, rs := range td.ResourceSpans().All() {
		w.line(0, "resource")
		dumpPdataAttrs(&w, 1, rs.Resource().Attributes())
		for _, ss := range rs.ScopeSpans().All() {
			sc := ss.Scope()
			w.line(1, "scope name=%q version=%q", sc.Name(), sc.Version())
			dumpPdataAttrs(&w, 2, sc.Attributes())
			for _, sp := range ss.Spans().All() {
				tid, sid, pid := sp.TraceID(), sp.SpanID(), sp.ParentSpanID()
				w.line(2, "span trace=%s span=%s parent=%s state=%q name=%q kind=%d start=%d end=%d code=%d msg=%q flags=%d",
					hex.EncodeToString(tid[:]), hex.EncodeToString(sid[:]), hex.EncodeToString(pid[:]),
					sp.TraceState().AsRaw(), sp.Name(), int32(sp.Kind()), sp.StartTimestamp(), sp.EndTimestamp(),
					int32(sp.Status().Code()), sp.Status().Message(), sp.Flags())
				dumpPdataAttrs(&w, 3, sp.Attributes())
				for _, ev := range sp.Events().All() {
					w.line(3, "event name=%q time=%d", ev.Name(), ev.Timestamp())
					dumpPdataAttrs(&w, 4, ev.Attributes())
				}
				for _, l := range sp.Links().All() {
					ltid, lsid := l.TraceID(), l.SpanID()
					w.line(3, "link trace=%s span=%s state=%q flags=%d",
						hex.EncodeToString(ltid[:]), hex.EncodeToString(lsid[:]), l.TraceState().AsRaw(), l.Flags())
					dumpPdataAttrs(&w, 4, l.Attributes())
				}
			}
		}
	}
	return w.String()
}

func dumpPdataAttrs(w *dumper, depth int, m pcommon.Map) {
	w.line(depth, "attributes n=%d", m.Len())
	for k, v := range m.All() {
		first, _ := m.Get(k)
		w.line(depth+1, "%q %s %q get=%s:%q raw=%s", k, v.Type(), v.AsString(), first.Type(), first.AsString(), rawPdata(v))
	}
}

func rawPdata(v pcommon.Value) string {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return fmt.Sprintf("%q", v.Str())
	case pcommon.ValueTypeInt:
		return fmt.Sprintf("int(%d)", v.Int())
	case pcommon.ValueTypeDouble:
		return fmt.Sprintf("double(%016x)", math.Float64bits(v.Double()))
	case pcommon.ValueTypeBool:
		return fmt.Sprintf("bool(%t)", v.Bool())
	case pcommon.ValueTypeBytes:
		return fmt.Sprintf("bytes(%x)", v.Bytes().AsRaw())
	case pcommon.ValueTypeSlice:
		parts := []string{}
		for _, e := range v.Slice().All() {
			parts = append(parts, rawPdata(e))
		}
		return fmt.Sprintf("[n=%d %s]", v.Slice().Len(), strings.Join(parts, ", "))
	case pcommon.ValueTypeMap:
		parts := []string{}
		for k, e := range v.Map().All() {
			first, _ := v.Map().Get(k)
			parts = append(parts, fmt.Sprintf("%q get=%s:%q: %s", k, first.Type(), first.AsString(), rawPdata(e)))
		}
		return fmt.Sprintf("{n=%d %s}", v.Map().Len(), strings.Join(parts, ", "))
	}
	return "empty"
}

func dumpWire(d *Decoder) string {
	var w dumper
	for i := range d.NumResources() {
		rs := d.Resource(i)
		w.line(0, "resource")
		dumpWireAttrs(&w, 1, rs.Attributes())
		for j := range rs.NumScopes() {
			sc := rs.Scope(j)
			w.line(1, "scope name=%q version=%q", sc.Name(), sc.Version())
			dumpWireAttrs(&w, 2, sc.Attributes())
			for k := range sc.NumSpans() {
				sp := sc.Span(k)
				tid, sid, pid := sp.TraceID(), sp.SpanID(), sp.ParentSpanID()
				w.line(2, "span trace=%s span=%s parent=%s state=%q name=%q kind=%d start=%d end=%d code=%d msg=%q flags=%d",
					hex.EncodeToString(tid[:]), hex.EncodeToString(sid[:]), hex.EncodeToString(pid[:]),
					sp.TraceState(), sp.Name(), sp.Kind(), sp.StartTimeUnixNano(), sp.EndTimeUnixNano(),
					sp.StatusCode(), sp.StatusMessage(), sp.Flags())
				dumpWireAttrs(&w, 3, sp.Attributes())
				for e := range sp.NumEvents() {
					ev := sp.Event(e)
					w.line(3, "event name=%q time=%d", ev.Name(), ev.TimeUnixNano())
					dumpWireAttrs(&w, 4, ev.Attributes())
				}
				for l := range sp.NumLinks() {
					ln := sp.Link(l)
					ltid, lsid := ln.TraceID(), ln.SpanID()
					w.line(3, "link trace=%s span=%s state=%q flags=%d",
						hex.EncodeToString(ltid[:]), hex.EncodeToString(lsid[:]), ln.TraceState(), ln.Flags())
					dumpWireAttrs(&w, 4, ln.Attributes())
				}
			}
		}
	}
	return w.String()
}

func dumpWireAttrs(w *dumper, depth int, a Attributes) {
	w.line(depth, "attributes n=%d", a.Len())
	for i := range a.Len() {
		k, v := a.At(i)
		first, _ := a.Get(string(k))
		if byBytes, _ := a.GetBytes(k); byBytes.typ != first.typ || byBytes.num != first.num {
			w.line(depth+1, "Get and GetBytes disagree for %q", k)
		}
		w.line(depth+1, "%q %s %q get=%s:%q raw=%s", k, v.Type(), v.AsString(), first.Type(), first.AsString(), rawWire(v))
	}
}

func rawWire(v Value) string {
	switch v.Type() {
	case ValueTypeStr:
		return fmt.Sprintf("%q", v.Str())
	case ValueTypeInt:
		return fmt.Sprintf("int(%d)", v.Int())
	case ValueTypeDouble:
		return fmt.Sprintf("double(%016x)", math.Float64bits(v.Double()))
	case ValueTypeBool:
		return fmt.Sprintf("bool(%t)", v.Bool())
	case ValueTypeBytes:
		return fmt.Sprintf("bytes(%x)", v.Bytes())
	case ValueTypeSlice:
		parts := []string{}
		for it := v.Slice().Iter(); it.Next(); {
			parts = append(parts, rawWire(it.Value()))
		}
		return fmt.Sprintf("[n=%d %s]", v.Slice().Len(), strings.Join(parts, ", "))
	case ValueTypeMap:
		parts := []string{}
		for it := v.Map().Iter(); it.Next(); {
			first, _ := v.Map().Get(string(it.Key()))
			parts = append(parts, fmt.Sprintf("%q get=%s:%q: %s", it.Key(), first.Type(), first.AsString(), rawWire(it.Value())))
		}
		return fmt.Sprintf("{n=%d %s}", v.Map().Len(), strings.Join(parts, ", "))
	}
	return "empty"
}
