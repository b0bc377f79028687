package tracegraph

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/open-telemetry/opentelemetry-collector-contrib/connector/servicegraphconnector"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracegraph/internal/metadata"
)

// benchRequests packs the spans of generated call graphs (callGraph, one export per span) into
// requests of about spansPerRequest spans each, as a collector's batch processor would.
func benchRequests(traces, spansPerRequest int) ([]ptrace.Traces, int) {
	exports := newCallGraph(7).traces(traces)
	var out []ptrace.Traces
	cur, total := ptrace.NewTraces(), 0
	for _, e := range exports {
		total += e.SpanCount()
		e.ResourceSpans().MoveAndAppendTo(cur.ResourceSpans())
		if cur.SpanCount() >= spansPerRequest {
			out = append(out, cur)
			cur = ptrace.NewTraces()
		}
	}
	if cur.SpanCount() > 0 {
		out = append(out, cur)
	}
	return out, total
}

// BenchmarkConsumeTraces runs servicegraph v0.159.0 and tracegraph on identical requests
// (generated call graphs, ~200 spans per request; the same trace IDs recur, so pairs keep
// completing and the stores stay bounded), serially and from GOMAXPROCS goroutines. Reported:
// spans/s and allocs/span, tracegraph's including the aggregator's work (the timed region ends
// when the aggregator has taken every span).
func BenchmarkConsumeTraces(b *testing.B) {
	requests, spans := benchRequests(2000, 200)
	perRequest := float64(spans) / float64(len(requests))
	for _, name := range []string{"servicegraph", "tracegraph"} {
		for _, parallel := range []bool{false, true} {
			mode := "serial"
			if parallel {
				mode = "parallel"
			}
			b.Run(fmt.Sprintf("%s/%s", name, mode), func(b *testing.B) {
				c, drained := benchConnector(b, name)
				ctx := context.Background()
				// Warm up: every series and pooled batch exists.
				for _, td := range requests {
					require.NoError(b, c.ConsumeTraces(ctx, td))
				}
				drained()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				b.ResetTimer()
				start := time.Now()
				if parallel {
					b.RunParallel(func(pb *testing.PB) {
						i := 0
						for pb.Next() {
							if err := c.ConsumeTraces(ctx, requests[i%len(requests)]); err != nil {
								b.Error(err)
							}
							i++
						}
					})
				} else {
					for i := 0; i < b.N; i++ {
						require.NoError(b, c.ConsumeTraces(ctx, requests[i%len(requests)]))
					}
				}
				drained()
				elapsed := time.Since(start)
				b.StopTimer()
				runtime.ReadMemStats(&after)
				n := float64(b.N) * perRequest
				b.ReportMetric(n/elapsed.Seconds(), "spans/s")
				// Every goroutine's allocations, per span, unrounded (allocs/op would round
				// down per request).
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/span")
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/span")
				require.NoError(b, c.Shutdown(ctx))
			})
		}
	}
}

// benchConnector returns a started connector of the named kind and a function that returns
// once it has processed everything consumed so far.
func benchConnector(b *testing.B, name string) (connector.Traces, func()) {
	sink := &consumertest.MetricsSink{}
	ctx := context.Background()
	if name == "servicegraph" {
		f := servicegraphconnector.NewFactory()
		cfg := f.CreateDefaultConfig().(*servicegraphconnector.Config)
		cfg.Store.TTL, cfg.Store.MaxItems = defaultStoreTTL, defaultStoreMaxItems
		c, err := f.CreateTracesToMetrics(ctx, settings(f.Type()), cfg, sink)
		require.NoError(b, err)
		require.NoError(b, c.Start(ctx, componenttest.NewNopHost()))
		return c, func() {} // synchronous: ConsumeTraces returns when it is done
	}
	f := NewFactory()
	c, err := f.CreateTracesToMetrics(ctx, settings(metadata.Type), f.CreateDefaultConfig(), sink)
	require.NoError(b, err)
	require.NoError(b, c.Start(ctx, componenttest.NewNopHost()))
	imp := c.(*connectorImp)
	return c, func() { imp.settle() }
}

// edgeTraces returns n calls, each a CLIENT span and its SERVER span in one trace, between n
// distinct pairs of services (one edge series each), with a dimension.
func edgeTraces(n int) ptrace.Traces {
	td := ptrace.NewTraces()
	for i := range n {
		for side, svc := range []string{fmt.Sprintf("client-%d", i%100), fmt.Sprintf("server-%d", i/100)} {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", svc)
			s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
			var trace pcommon.TraceID
			trace[0], trace[1], trace[2] = byte(i), byte(i>>8), byte(i>>16)
			trace[15] = 1
			s.SetTraceID(trace)
			id := pcommon.SpanID{1, byte(i), byte(i >> 8), byte(i >> 16)}
			if side == 0 {
				s.SetKind(ptrace.SpanKindClient)
				s.SetSpanID(id)
			} else {
				s.SetKind(ptrace.SpanKindServer)
				s.SetSpanID(pcommon.SpanID{2, byte(i), byte(i >> 8), byte(i >> 16)})
				s.SetParentSpanID(id)
			}
			s.SetStartTimestamp(1_000_000_000)
			s.SetEndTimestamp(pcommon.Timestamp(1_000_000_000 + (i%1000+1)*1_000_000))
			s.Attributes().PutStr("http.method", "GET")
		}
	}
	return td
}

// BenchmarkFlushHandoff measures one flush of n edge series: consumer-µs is the time the
// consumer goroutine spends on it (the aggregator's Swap, which copies the series into the
// snapshot; meanwhile it does not drain the ring), flush-µs the whole flush until the metrics
// are handed to the next consumer (the copy, then the flusher's build). Before the pipeline
// stage the aggregator built the metrics itself, so the two were equal.
func BenchmarkFlushHandoff(b *testing.B) {
	for _, n := range []int{1000, 10_000} {
		for _, kind := range []string{"explicit", "exponential"} {
			b.Run(fmt.Sprintf("series=%dk/%s", n/1000, kind), func(b *testing.B) {
				cfg := createDefaultConfig().(*Config)
				cfg.Dimensions = []string{"http.method"}
				if kind == "exponential" {
					cfg.ExponentialHistogramMaxSize = 160
				}
				e := newEngine(newPlan(cfg))
				e.consume(edgeTraces(n))
				require.Equal(b, n, e.agg.series.live)
				sink := &consumertest.MetricsSink{}
				var consumer, total time.Duration
				b.ResetTimer()
				for range b.N {
					t0 := time.Now()
					s := e.swap()
					t1 := time.Now()
					md, _ := e.build(s)
					_ = sink.ConsumeMetrics(context.Background(), md)
					sink.Reset()
					consumer += t1.Sub(t0)
					total += time.Since(t0)
				}
				b.ReportMetric(float64(consumer.Microseconds())/float64(b.N), "consumer-µs")
				b.ReportMetric(float64(total.Microseconds())/float64(b.N), "flush-µs")
			})
		}
	}
}

// BenchmarkPooledBytesAfterBurst reports the bytes of the batches kept for reuse (the free
// list) once traffic of small requests (20 spans, 8 producers) follows one burst request of
// 10,000 spans and two flush intervals: with size hints that forget older intervals, the
// batches made for the small traffic are small; with hints that only grew, every batch made
// after the burst was the burst's size.
func BenchmarkPooledBytesAfterBurst(b *testing.B) {
	burst, _ := benchRequests(5000, 10_000)
	small, _ := benchRequests(2000, 20)
	for range b.N {
		clock := clockwork.NewFakeClock()
		c, err := newConnector(settings(metadata.Type).TelemetrySettings, createDefaultConfig().(*Config), consumertest.NewNop(), clock)
		require.NoError(b, err)
		require.NoError(b, c.Start(context.Background(), componenttest.NewNopHost()))
		require.NoError(b, c.ConsumeTraces(context.Background(), burst[0]))
		for i := range 2 {
			c.settle()
			require.NoError(b, clock.BlockUntilContext(context.Background(), 3))
			clock.Advance(defaultFlushInterval)
			require.Eventually(b, func() bool { return c.tel.flushes.Load() == int64(i+1) }, 10*time.Second, time.Millisecond)
		}
		var wg sync.WaitGroup
		for p := range 8 {
			wg.Go(func() {
				for i := p; i < len(small); i += 8 {
					_ = c.ConsumeTraces(context.Background(), small[i])
				}
			})
		}
		wg.Wait()
		c.settle()
		b.ReportMetric(float64(c.pipe.Free.HeldBytes())/(1<<20), "pooled-MiB")
		require.NoError(b, c.Shutdown(context.Background()))
	}
}
