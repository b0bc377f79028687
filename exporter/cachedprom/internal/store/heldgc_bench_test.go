package store

import (
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
)

// holdHistograms returns a store holding n histogram series of one family,
// exponential (ten positive buckets and one negative, as a small
// tracemetrics histogram) or explicit (spanmetrics' bounds).
func holdHistograms(exponential bool, n int) *Store {
	s := newTestStore()
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("latency")
	if exponential {
		h := m.SetEmptyExponentialHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		for i := range n {
			dp := h.DataPoints().AppendEmpty()
			dp.SetScale(3)
			dp.Positive().SetOffset(10)
			dp.Positive().BucketCounts().FromRaw([]uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
			dp.Negative().SetOffset(-2)
			dp.Negative().BucketCounts().FromRaw([]uint64{1})
			dp.SetCount(56)
			dp.SetSum(100)
			dp.Attributes().PutInt("k", int64(i))
		}
	} else {
		h := m.SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		for i := range n {
			dp := h.DataPoints().AppendEmpty()
			dp.ExplicitBounds().FromRaw(promtest.SpanmetricsBounds)
			counts := make([]uint64, len(promtest.SpanmetricsBounds)+1)
			counts[3] = 56
			dp.BucketCounts().FromRaw(counts)
			dp.SetCount(56)
			dp.SetSum(100)
			dp.Attributes().PutInt("k", int64(i))
		}
	}
	s.Consume(md, time.Now())
	return s
}

// heldObjects builds a store of n series and returns it with the number of
// heap objects it holds once the batch it was built from is garbage.
func heldObjects(exponential bool, n int) (int64, *Store) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := holdHistograms(exponential, n)
	runtime.GC()
	runtime.ReadMemStats(&after)
	return int64(after.HeapObjects) - int64(before.HeapObjects), s
}

// BenchmarkHeldSeriesGC times a forced collection while the store holds
// 100k histogram series, exponential against explicit: what the held state
// costs every collection cycle, which ingest through the binary (where
// decoding allocates per span) pays often. heap-objects is what the store
// holds.
func BenchmarkHeldSeriesGC(b *testing.B) {
	for _, kind := range []struct {
		name string
		exp  bool
	}{{"explicit", false}, {"exponential", true}} {
		b.Run(kind.name, func(b *testing.B) {
			objs, s := heldObjects(kind.exp, 100_000)
			b.ResetTimer()
			for b.Loop() {
				runtime.GC()
			}
			b.ReportMetric(float64(objs), "heap-objects")
			runtime.KeepAlive(s)
			s.Close()
		})
	}
}
