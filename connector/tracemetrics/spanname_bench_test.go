package tracemetrics

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// spanNameInput returns Traces of 1000 HTTP server spans of 10 services named
// "GET /api/v1/resource/<id>", with http.request.method and http.route "/api/v1/resource/{id}":
// `distinct` ids in turn, across `calls` Traces. distinct ≤ a few thousand is a hot set (the
// rule cache answers); more names than the cache holds make many spans miss it.
func spanNameInput(distinct, calls int) []ptrace.Traces {
	out := make([]ptrace.Traces, calls)
	id := 0
	for c := range out {
		td := ptrace.NewTraces()
		for svc := range 10 {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr(series.ServiceNameKey, fmt.Sprintf("service-%d", svc))
			spans := rs.ScopeSpans().AppendEmpty().Spans()
			for range 100 {
				sp := spans.AppendEmpty()
				sp.SetName(fmt.Sprintf("GET /api/v1/resource/%d", id%distinct))
				id++
				sp.SetKind(ptrace.SpanKindServer)
				sp.SetStartTimestamp(pcommon.NewTimestampFromTime(testStart))
				sp.SetEndTimestamp(pcommon.NewTimestampFromTime(testStart) + pcommon.Timestamp(1e6+id%7e6))
				sp.Attributes().PutStr("http.request.method", "GET")
				sp.Attributes().PutStr("http.route", "/api/v1/resource/{id}")
				sp.Attributes().PutInt("http.response.status_code", 200)
				sp.Attributes().PutStr("url.scheme", "https")
			}
		}
		out[c] = td
	}
	return out
}

// BenchmarkSpanNames measures the producer side (spans → deltaBatch, as BenchmarkReduce) with
// span_name off, with each layer and with both, on the same input in the same run.
func BenchmarkSpanNames(b *testing.B) {
	rule := map[string]any{"match": `^GET /api/v1/resource/\d+$`, "replace": "GET /api/v1/resource/{id}"}
	// A rule for another service first: every span tries one regexp that does not apply to it.
	other := map[string]any{"service": "service-0", "match": `^POST `, "replace": "POST"}
	configs := []struct {
		name string
		raw  map[string]any
	}{
		{"off", map[string]any{}},
		{"semconv", map[string]any{"span_name": map[string]any{"from_semantic_conventions": true}}},
		{"rules", rulesConfig(false, other, rule)},
		{"semconv+rules", rulesConfig(true, other, map[string]any{"match": `^GET (/api/.*)$`, "replace": "GET $1"})},
	}
	// names=16k: 16 calls of 1000 distinct names, 4× what the rule cache holds.
	for _, in := range []struct {
		name     string
		distinct int
	}{{"names=1000", 1000}, {"names=16k", 1 << 30}} {
		input := spanNameInput(in.distinct, 16)
		for _, cfg := range configs {
			b.Run(in.name+"/"+cfg.name, func(b *testing.B) {
				r := startConnector(b, NewFactory(), cfg.raw)
				timeReduce(b, r.conn.(*connectorImp).reducer, input, 1000, nil)
			})
		}
	}
}
