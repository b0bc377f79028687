package tracemetrics

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// clusteringVariants are span_name.clustering off, in dry run (all the work, output as off)
// and on, on top of the benchmarks' configuration.
func clusteringVariants() []struct {
	name string
	raw  map[string]any
} {
	with := func(c map[string]any) map[string]any {
		raw := configFor(NewFactory())
		raw["span_name"] = map[string]any{"clustering": c}
		return raw
	}
	return []struct {
		name string
		raw  map[string]any
	}{
		{"off", configFor(NewFactory())},
		{"dry_run", with(map[string]any{"enabled": true, "dry_run": true})},
		{"on", with(map[string]any{"enabled": true})},
	}
}

// BenchmarkClustering measures ConsumeTraces, aggregation included, as BenchmarkConsumeTraces
// does, with clustering off, in dry run and on, in the same run. benchInput's span names
// carry their id ("GET /api/v1/resource/<n>") and no http.route: clustering on keys them all
// by "GET /api/v1/resource/{id}", so the aggregator has ~10 series to update instead of
// `series`; dry run pays for the clustering and keeps every series.
func BenchmarkClustering(b *testing.B) {
	for _, nSeries := range []int{1_000, 100_000} {
		input := benchInput(nSeries, 1000)
		for _, v := range clusteringVariants() {
			b.Run(fmt.Sprintf("series=%dk/producers=2/%s", nSeries/1000, v.name), func(b *testing.B) {
				r := startConnector(b, NewFactory(), v.raw)
				consumeParallel(r.conn, input, 2, max(len(input), 2000))
				settleIfOurs(b, r.conn)
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				b.ReportAllocs()
				b.ResetTimer()
				start, cpuStart := time.Now(), processCPU()
				consumeParallel(r.conn, input, 2, b.N)
				settleIfOurs(b, r.conn)
				elapsed, cpu := time.Since(start), processCPU()-cpuStart
				b.StopTimer()
				runtime.ReadMemStats(&after)
				spans := float64(b.N) * float64(input[0].SpanCount())
				b.ReportMetric(float64(elapsed.Nanoseconds())/spans, "ns/span")
				b.ReportMetric(float64(cpu.Nanoseconds())/spans, "cpu-ns/span")
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/spans, "allocs/span")
				require.NoError(b, r.conn.Shutdown(context.Background()))
			})
		}
	}
}

// BenchmarkClusteringReduce measures the producer side alone (spans → deltaBatch, as
// BenchmarkReduce), where the clustering decision is made: 100k distinct names in 1000-span
// calls, the template learned during warm-up. With http.route on every span (spanNameInput)
// clustering only looks the attribute up and leaves the name.
func BenchmarkClusteringReduce(b *testing.B) {
	for _, in := range []struct {
		name  string
		input func() []ptrace.Traces
	}{
		{"ids", func() []ptrace.Traces { return benchInput(100_000, 1000) }},
		{"routes", func() []ptrace.Traces { return spanNameInput(1<<30, 16) }},
	} {
		input := in.input()
		for _, v := range clusteringVariants() {
			b.Run(in.name+"/"+v.name, func(b *testing.B) {
				raw := maps.Clone(v.raw)
				r := startConnector(b, NewFactory(), raw)
				red := r.conn.(*connectorImp).reducer
				// Learned once; then the names alone are timed, without learning.
				learn, batch := learnAfter(r.conn.(*connectorImp)), new(series.Batch)
				for _, td := range input {
					red.Reduce(batch, td)
					learn(batch)
					series.Batches.Reset(batch)
				}
				timeReduce(b, red, input, 1000, nil)
			})
		}
	}
}
