package tracemetrics

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// BenchmarkHistogramKinds runs the same spans through tracemetrics with explicit (the default
// buckets) and with exponential (max_size 160, as configs/native-histograms.yaml) duration
// histograms, in the same run, so that the two can be compared directly. Durations are
// log-uniform from 100 µs to 1 s, as the testbed's load generator draws them.
//
//   - reduce: the producer side alone (spans → deltaBatch, each duration's bucket index);
//   - apply: the aggregator alone, every series present (each observation's bucket count);
//   - interval: ConsumeTraces from two producers, aggregation included, with a delta flush
//     each time every series has had perInterval spans, the flush (into a no-op consumer)
//     included: what the collector does per span over whole intervals;
//   - flush: the same, with only the flushes measured, per series.
func BenchmarkHistogramKinds(b *testing.B) {
	const batch = 1000
	for _, nSeries := range []int{1_000, 100_000} {
		input := logUniformDurations(benchInput(nSeries, batch))
		for _, stage := range []string{"reduce", "apply", "interval", "flush"} {
			for _, kind := range []string{"explicit", "exponential"} {
				b.Run(fmt.Sprintf("series=%dk/%s/%s", nSeries/1000, stage, kind), func(b *testing.B) {
					raw := histogramConfig(kind)
					switch stage {
					case "reduce":
						benchReduceWith(b, raw, input, batch)
					case "apply":
						benchApplyWith(b, raw, input, batch)
					case "interval", "flush":
						benchIntervals(b, raw, input, nSeries, stage == "flush")
					}
				})
			}
		}
	}
}

// histogramConfig is configFor(tracemetrics) with the histogram of kind.
func histogramConfig(kind string) map[string]any {
	raw := maps.Clone(configFor(NewFactory()))
	if kind == "exponential" {
		raw["histogram"] = map[string]any{"exponential": map[string]any{"max_size": 160}}
	}
	return raw
}

// logUniformDurations gives every span of input a duration drawn log-uniformly from 100 µs to
// 1 s (as fillSpan in testbed/loadtest/harness draws them), deterministically.
func logUniformDurations(input []ptrace.Traces) []ptrace.Traces {
	r := rand.New(rand.NewPCG(7, 11))
	seen := map[ptrace.Traces]bool{}
	for _, td := range input {
		if seen[td] {
			continue
		}
		seen[td] = true
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			ss := td.ResourceSpans().At(i).ScopeSpans()
			for j := 0; j < ss.Len(); j++ {
				spans := ss.At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					sp := spans.At(k)
					d := float64(100*time.Microsecond) * math.Pow(10, r.Float64()*4)
					sp.SetEndTimestamp(sp.StartTimestamp() + pcommon.Timestamp(d))
				}
			}
		}
	}
	return input
}

func benchReduceWith(b *testing.B, raw map[string]any, input []ptrace.Traces, batchSize int) {
	r := startConnector(b, NewFactory(), raw)
	timeReduce(b, r.conn.(*connectorImp).reducer, input, batchSize, nil)
}

func benchApplyWith(b *testing.B, raw map[string]any, input []ptrace.Traces, batchSize int) {
	c, batches := appliedConnector(b, raw, input)
	timeApply(b, c, batches, batchSize)
}

// perInterval is how many spans each series gets per flush interval in benchIntervals (the
// testbed's native run gives ~330: 2.2M spans/s over 100k series for 15 s; fewer here weighs
// the flush a little more).
const perInterval = 100

// benchIntervals measures ConsumeTraces over whole delta intervals. One iteration is one
// interval: ConsumeTraces from two producers until every series has had perInterval spans,
// then the flush, into a no-op consumer. cpu-ns/span counts all of it; with flushOnly, only
// the flush is measured, as flush-ns/series.
func benchIntervals(b *testing.B, raw map[string]any, input []ptrace.Traces, nSeries int, flushOnly bool) {
	raw = maps.Clone(raw)
	raw["aggregation_temporality"] = delta
	r := startConnectorTo(b, NewFactory(), raw, func(*consumertest.MetricsSink) consumer.Metrics { return consumertest.NewNop() })
	ours := r.conn.(*connectorImp)
	calls := nSeries * perInterval / input[0].SpanCount()
	interval := func() time.Duration {
		consumeParallel(r.conn, input, 2, calls)
		ours.settle(b)
		start := processCPU()
		r.flush()
		return processCPU() - start
	}
	// Warm-up: two intervals, both delta buffers grown to this load.
	interval()
	interval()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	start := processCPU()
	var flushCPU time.Duration
	for i := 0; i < b.N; i++ {
		flushCPU += interval()
	}
	cpu := processCPU() - start
	b.StopTimer()
	runtime.ReadMemStats(&after)
	if flushOnly {
		b.ReportMetric(float64(flushCPU.Nanoseconds())/float64(b.N*nSeries), "flush-ns/series")
		return
	}
	spans := float64(b.N) * float64(calls*input[0].SpanCount())
	b.ReportMetric(float64(cpu.Nanoseconds())/spans, "cpu-ns/span")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/spans, "allocs/span")
}
