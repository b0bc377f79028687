package hotspotfilter

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/filterprocessor"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/otelcol-red/otelcol-red/connector/hotspotfilter/internal/metadata"
)

// stockCondition is the filter processor's stateless twin of the default
// rule with budget 0: drop fast, successful Redis client spans. It cannot
// express a budget, a burst or the parent exemption.
const stockCondition = `kind == SPAN_KIND_CLIENT and (attributes["db.system"] == "redis" or attributes["db.system.name"] == "redis")` +
	` and status.code != STATUS_CODE_ERROR and end_time_unix_nano - start_time_unix_nano < 10000000`

// benchBatch is one SDK-like batch of 100 spans: a hot service with 80 Redis
// spans (one error, one slow) under 5 request spans, a second service with 10
// Redis spans, a third with 5 HTTP spans.
func benchBatch(seed uint64) ptrace.Traces {
	var spans []testSpan
	id := seed * 1000
	next := func() uint64 { id++; return id }
	for r := 0; r < 5; r++ {
		parent := next()
		spans = append(spans, testSpan{service: "cart", kind: ptrace.SpanKindServer, dur: 20 * time.Millisecond, id: parent})
		for c := 0; c < 16; c++ {
			s := redis("cart", next())
			s.parent = parent
			spans = append(spans, s)
		}
	}
	spans[1].status = ptrace.StatusCodeError
	spans[2].dur = 15 * time.Millisecond
	for c := 0; c < 10; c++ {
		spans = append(spans, redis("catalog", next()))
	}
	for c := 0; c < 5; c++ {
		spans = append(spans, testSpan{service: "web", kind: ptrace.SpanKindServer, dur: time.Millisecond, id: next()})
	}
	return makeTraces(spans...)
}

// countingSink counts the spans a component passes on, concurrency-safe and
// without retaining them.
type countingSink struct{ spans atomic.Int64 }

func (s *countingSink) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }
func (s *countingSink) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	s.spans.Add(int64(td.SpanCount()))
	return nil
}

// BenchmarkDecide measures the cost per span of judging identical batches:
// hotspotfilter (budget 0, the exact twin of the stock condition, and the
// default budget of 100/s) next to filterprocessor with the stateless
// condition. The filter processor edits its input, so in a fan-out (the
// intended topology, beside tracemetrics) the collector hands it a clone:
// its timing includes that clone, and clone-only shows the clone alone.
func BenchmarkDecide(b *testing.B) {
	const spansPerBatch = 100
	for _, producers := range []int{1, 2, 4, 8} {
		inputs := make([]ptrace.Traces, producers)
		for i := range inputs {
			inputs[i] = benchBatch(uint64(i + 1))
			inputs[i].MarkReadOnly() // as the fan-out shares it
		}
		require.Equal(b, spansPerBatch, inputs[0].SpanCount())

		b.Run(fmt.Sprintf("hotspotfilter/budget=0/producers=%d", producers), func(b *testing.B) {
			sink := benchOurs(b, 0, inputs, producers)
			// 12 kept per batch: the error, the slow one, 5 request and 5 web spans.
			require.EqualValues(b, int64(b.N)*12, sink.spans.Load())
		})
		b.Run(fmt.Sprintf("hotspotfilter/budget=100/producers=%d", producers), func(b *testing.B) {
			sink := benchOurs(b, 100, inputs, producers)
			require.GreaterOrEqual(b, sink.spans.Load(), int64(b.N)*12)
		})
		b.Run(fmt.Sprintf("filterprocessor/producers=%d", producers), func(b *testing.B) {
			sink := &countingSink{}
			cfg := filterprocessor.NewFactory().CreateDefaultConfig().(*filterprocessor.Config)
			cfg.Traces.SpanConditions = []string{stockCondition}
			proc, err := filterprocessor.NewFactory().CreateTraces(context.Background(),
				processortest.NewNopSettings(filterprocessor.NewFactory().Type()), cfg, sink)
			require.NoError(b, err)
			require.NoError(b, proc.Start(context.Background(), componenttest.NewNopHost()))
			defer func() { require.NoError(b, proc.Shutdown(context.Background())) }()
			runProducers(b, producers, spansPerBatch, func(p int) {
				td := ptrace.NewTraces()
				inputs[p].CopyTo(td)
				_ = proc.ConsumeTraces(context.Background(), td)
			})
			require.EqualValues(b, int64(b.N)*12, sink.spans.Load(), "both drop the same spans")
		})
		b.Run(fmt.Sprintf("clone-only/producers=%d", producers), func(b *testing.B) {
			runProducers(b, producers, spansPerBatch, func(p int) {
				td := ptrace.NewTraces()
				inputs[p].CopyTo(td)
			})
		})
	}
}

func benchOurs(b *testing.B, budget float64, inputs []ptrace.Traces, producers int) *countingSink {
	sink := &countingSink{}
	cfg := singleRule(Rule{Budget: budget, SlowThreshold: defaultSlowThreshold, KeepErrors: true})
	c, err := NewFactory().CreateTracesToTraces(context.Background(), connectortest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(b, err)
	require.NoError(b, c.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(b, c.Shutdown(context.Background())) }()
	runProducers(b, producers, inputs[0].SpanCount(), func(p int) {
		_ = c.ConsumeTraces(context.Background(), inputs[p])
	})
	return sink
}

// runProducers calls consume b.N times in total from producers goroutines,
// producer p always with its own input, and reports per span: wall time
// (ns/span), CPU time of the process including GC (cpu-ns/span) and
// allocations (allocs/span).
func runProducers(b *testing.B, producers, spansPerBatch int, consume func(p int)) {
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpuBefore := processCPU()
	b.ResetTimer()
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		n := b.N / producers
		if p < b.N%producers {
			n++
		}
		wg.Add(1)
		go func(p, n int) {
			defer wg.Done()
			for i := 0; i < n; i++ {
				consume(p)
			}
		}(p, n)
	}
	wg.Wait()
	b.StopTimer()
	cpu := processCPU() - cpuBefore
	runtime.ReadMemStats(&after)
	spans := float64(b.N * spansPerBatch)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/spans, "ns/span")
	b.ReportMetric(float64(cpu.Nanoseconds())/spans, "cpu-ns/span")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/spans, "allocs/span")
}
