package otlpwire

import (
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The walk a RED and service-graph engine makes over a request: per resource the service
// name, per span its name, kind, status, duration, IDs, trace state, two dimension
// attributes rendered as strings, and the links' IDs. Both walks fold what they read into
// a checksum, so that nothing is optimised away and the two can be compared.

var redDimensions = []string{"http.request.method", "http.response.status_code"}

func walkWire(d *Decoder, scratch []byte) (uint64, []byte) {
	var sum uint64
	for i := range d.NumResources() {
		rs := d.Resource(i)
		svc, _ := rs.Attributes().Get("service.name")
		sum += uint64(len(svc.Str()))
		for j := range rs.NumScopes() {
			sc := rs.Scope(j)
			for k := range sc.NumSpans() {
				sp := sc.Span(k)
				tid, sid, pid := sp.TraceID(), sp.SpanID(), sp.ParentSpanID()
				sum += uint64(tid[0]) + uint64(sid[0]) + uint64(pid[0])
				sum += uint64(len(sp.Name())) + uint64(sp.Kind()) + uint64(sp.StatusCode())
				sum += sp.EndTimeUnixNano() - sp.StartTimeUnixNano() + uint64(len(sp.TraceState()))
				attrs := sp.Attributes()
				for _, dim := range redDimensions {
					if v, ok := attrs.Get(dim); ok {
						scratch = v.AppendString(scratch[:0])
						sum += uint64(len(scratch))
					}
				}
				for l := range sp.NumLinks() {
					ln := sp.Link(l)
					ltid, lsid := ln.TraceID(), ln.SpanID()
					sum += uint64(ltid[0]) + uint64(lsid[0])
				}
			}
		}
	}
	return sum, scratch
}

func walkPdata(td ptrace.Traces) uint64 {
	var sum uint64
	for _, rs := range td.ResourceSpans().All() {
		svc, _ := rs.Resource().Attributes().Get("service.name")
		sum += uint64(len(svc.Str()))
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				tid, sid, pid := sp.TraceID(), sp.SpanID(), sp.ParentSpanID()
				sum += uint64(tid[0]) + uint64(sid[0]) + uint64(pid[0])
				sum += uint64(len(sp.Name())) + uint64(sp.Kind()) + uint64(sp.Status().Code())
				sum += uint64(sp.EndTimestamp()-sp.StartTimestamp()) + uint64(len(sp.TraceState().AsRaw()))
				attrs := sp.Attributes()
				for _, dim := range redDimensions {
					if v, ok := attrs.Get(dim); ok {
						sum += uint64(len(v.AsString()))
					}
				}
				for _, l := range sp.Links().All() {
					ltid, lsid := l.TraceID(), l.SpanID()
					sum += uint64(ltid[0]) + uint64(lsid[0])
				}
			}
		}
	}
	return sum
}
