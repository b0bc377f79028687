package graph

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/connector/servicegraphconnector"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// halfEdges is how many unpaired client spans BenchmarkServiceGraphStoreBytes holds: twice
// configs/servicegraph.yaml's store.max_items, so the figure is not a small-map artefact.
const halfEdges = 200_000

// liveHeap is the heap in use after two collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkServiceGraphStoreBytes measures the heap that contrib's servicegraph connector holds per
// half edge waiting in its store (a client span whose server span has not come), the figure behind
// the store.max_items of configs/servicegraph.yaml: halfEdges client spans of one service with no
// server span, the ttl long enough that none expires. Reported as B/half-edge, for spans with no
// attribute and for spans with db.system (a virtual node's name, which the half keeps).
func BenchmarkServiceGraphStoreBytes(b *testing.B) {
	for _, attrs := range []map[string]string{nil, {"db.system": "postgresql"}} {
		name := "plain"
		if attrs != nil {
			name = "db.system"
		}
		b.Run(name, func(b *testing.B) { benchmarkStoreBytes(b, attrs) })
	}
}

func benchmarkStoreBytes(b *testing.B, attrs map[string]string) {
	for b.Loop() {
		b.StopTimer()
		f := servicegraphconnector.NewFactory()
		cfg := f.CreateDefaultConfig().(*servicegraphconnector.Config)
		cfg.Store.TTL = time.Hour
		cfg.Store.MaxItems = halfEdges
		c, err := f.CreateTracesToMetrics(context.Background(), connectortest.NewNopSettings(f.Type()), cfg, new(consumertest.MetricsSink))
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Start(context.Background(), componenttest.NewNopHost()); err != nil {
			b.Fatal(err)
		}
		before := liveHeap()
		b.StartTimer()
		// One batch of 1000 spans at a time, so the batches are garbage by the second reading.
		for batch := 0; batch < halfEdges/1000; batch++ {
			td := ptrace.NewTraces()
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", "a")
			spans := rs.ScopeSpans().AppendEmpty().Spans()
			for i := range 1000 {
				s := spans.AppendEmpty()
				s.SetKind(ptrace.SpanKindClient)
				s.SetTraceID(pcommon.TraceID{byte(batch), byte(batch >> 8), byte(i), byte(i >> 8), 1})
				s.SetSpanID(pcommon.SpanID{byte(batch), byte(batch >> 8), byte(i), byte(i >> 8), 2})
				s.SetStartTimestamp(1)
				s.SetEndTimestamp(2)
				for k, v := range attrs {
					s.Attributes().PutStr(k, v)
				}
			}
			if err := c.ConsumeTraces(context.Background(), td); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		after := liveHeap()
		if after <= before {
			b.Fatalf("heap did not grow while %d half edges were stored (%d → %d B)", halfEdges, before, after)
		}
		b.ReportMetric(float64(after-before)/halfEdges, "B/half-edge")
		if err := c.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
		runtime.KeepAlive(c)
		b.StartTimer()
	}
}
