package store // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"

import (
	"encoding/hex"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Exemplar is what the expositions show of an OTLP exemplar. The ids are
// kept as bytes and written as hex labels at render time: rendered at
// ingest, they were three allocations and about 80 bytes more per exemplar,
// and with native histograms' exemplars kept (5 per series from
// tracemetrics) that is per series.
type Exemplar struct {
	Value   float64
	TS      pcommon.Timestamp
	TraceID pcommon.TraceID // zero when unset
	SpanID  pcommon.SpanID  // zero when unset
}

// ExemplarOf is what the store keeps of OTLP exemplar e of a point at
// pointTS: its value as a float, its ids, and its timestamp, the point's
// when it has none (Prometheus ignores native histogram exemplars without
// one).
func ExemplarOf(e pmetric.Exemplar, pointTS pcommon.Timestamp) Exemplar {
	var v float64
	switch e.ValueType() {
	case pmetric.ExemplarValueTypeDouble:
		v = e.DoubleValue()
	case pmetric.ExemplarValueTypeInt:
		v = float64(e.IntValue())
	}
	ts := e.Timestamp()
	if ts == 0 {
		ts = pointTS
	}
	return Exemplar{Value: v, TS: ts, TraceID: e.TraceID(), SpanID: e.SpanID()}
}

// HasLabels tells whether the exemplar has a trace or span id.
func (e *Exemplar) HasLabels() bool { return !e.TraceID.IsEmpty() || !e.SpanID.IsEmpty() }

// AppendLabels writes `span_id="..",trace_id=".."`, the ids that are set in
// name order, as a label set is written (hex needs no escaping).
func (e *Exemplar) AppendLabels(dst []byte) []byte {
	if !e.SpanID.IsEmpty() {
		dst = append(dst, `span_id="`...)
		dst = hex.AppendEncode(dst, e.SpanID[:])
		dst = append(dst, '"')
	}
	if !e.TraceID.IsEmpty() {
		if !e.SpanID.IsEmpty() {
			dst = append(dst, ',')
		}
		dst = append(dst, `trace_id="`...)
		dst = hex.AppendEncode(dst, e.TraceID[:])
		dst = append(dst, '"')
	}
	return dst
}

// exemplars holds the exemplars of the rows that have some, by row.
type exemplars map[uint32][]Exemplar

// set keeps what OpenMetrics and the protobuf exposition show of a point's
// exemplars: value, timestamp, trace and span id. An exemplar without a
// timestamp takes pointTS unless it is 0 (OpenMetrics writes none then;
// Prometheus ignores native histogram exemplars without one). It reuses
// the row's slice, so a series whose exemplars keep their number allocates
// nothing.
func (xs exemplars) set(id uint32, es pmetric.ExemplarSlice, pointTS pcommon.Timestamp) {
	if es.Len() == 0 {
		delete(xs, id)
		return
	}
	dst := xs[id][:0]
	for i := 0; i < es.Len(); i++ {
		dst = append(dst, ExemplarOf(es.At(i), pointTS))
	}
	xs[id] = dst
}
