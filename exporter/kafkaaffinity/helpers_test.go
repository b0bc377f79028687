package kafkaaffinity

import (
	"encoding/binary"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// traceID makes a trace ID whose sub-key is predictable from n.
func traceID(n uint64) pcommon.TraceID {
	var id pcommon.TraceID
	binary.BigEndian.PutUint64(id[:8], n*7919)
	binary.BigEndian.PutUint64(id[8:], n)
	return id
}

// addResource appends a resource with attrs (service.name when svc != "")
// holding spans spans of traces trace IDs cycling over traces.
func addResource(td ptrace.Traces, svc string, spans, traces int) {
	rs := td.ResourceSpans().AppendEmpty()
	if svc != "" {
		rs.Resource().Attributes().PutStr("service.name", svc)
	}
	rs.Resource().Attributes().PutStr("host.name", "h1")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("lib")
	for i := 0; i < spans; i++ {
		s := ss.Spans().AppendEmpty()
		s.SetName("op")
		s.SetTraceID(traceID(uint64(i % traces)))
		var sid pcommon.SpanID
		binary.BigEndian.PutUint64(sid[:], uint64(i+1))
		s.SetSpanID(sid)
	}
}

func testConfig() *Config {
	return createDefaultConfig().(*Config)
}
