package kafkaaffinity

import (
	"strconv"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// BenchmarkKey is the keying path per resource: 0 allocs/op is the claim.
func BenchmarkKey(b *testing.B) {
	kr := newKeyer(testConfig())
	td := ptrace.NewTraces()
	addResource(td, "checkout", 1, 1)
	res := td.ResourceSpans().At(0).Resource()
	b.ReportAllocs()
	for b.Loop() {
		kr.key(res)
	}
}

// BenchmarkGrouping splits a 400-span request of 120 services (one of them a listed hot key)
// into per-key Traces; the copies it makes are what a request costs beyond the stock exporter's.
func BenchmarkGrouping(b *testing.B) {
	cfg := testConfig()
	cfg.HotKeys.Keys = []StaticHotKey{{Key: "svc-0", Fanout: 4}}
	g := newGrouping(cfg, newHotKeys(cfg.HotKeys))
	td := ptrace.NewTraces()
	for i := 0; i < 120; i++ {
		n := 3
		if i == 0 {
			n = 40
		}
		addResource(td, "svc-"+strconv.Itoa(i), n, n)
	}
	b.ReportAllocs()
	for b.Loop() {
		g.add(td)
		g.reset()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*td.SpanCount()), "ns/span")
}
