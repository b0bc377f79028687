package series // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

import "github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"

// Mapping is a dimension_mappings entry (Grafana Tempo's): one label whose value joins the
// values of several attributes.
type Mapping struct {
	Sources []string // source_labels, in order
	Join    string   // put between two values
}

// lookupMapping returns the value of mapping m for the span of ds: the string forms
// (pcommon.Value.AsString) of the sources found, each looked up as a named dimension is (the
// span, the event, the resource), empty ones skipped, joined by m.Join; absent when none is
// found or all are empty, as Tempo leaves a label with an empty value out. The joined bytes
// are built in *ds.Enc, which lives as long as the request's other encoded values: a span
// costs no allocation once the buffer has grown.
func lookupMapping[S traceview.Source](ds *Dims[S], m *Mapping) (traceview.Val, bool) {
	buf := *ds.Enc
	off := len(buf)
	for _, src := range m.Sources {
		v, ok := ds.Span.Get(src)
		if !ok && ds.Event != nil {
			v, ok = ds.Event.Get(src)
		}
		if !ok {
			v, ok = ds.ResAttrs.Get(src)
		}
		if !ok {
			continue
		}
		mark := len(buf)
		if mark > off {
			buf = append(buf, m.Join...)
		}
		at := len(buf)
		if buf = v.AppendString(buf); len(buf) == at {
			buf = buf[:mark] // an empty value is skipped, with its separator
		}
	}
	*ds.Enc = buf
	if len(buf) == off {
		return traceview.Val{}, false
	}
	return traceview.StrVal(traceview.String(buf[off:])), true
}
