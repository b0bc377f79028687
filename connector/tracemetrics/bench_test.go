package tracemetrics

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/open-telemetry/opentelemetry-collector-contrib/connector/spanmetricsconnector"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/flush"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/reduce"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/hash"
)

// Benchmarks run spanmetrics (v0.165.1, the release in go.mod) and tracemetrics side by side on identical input, in the
// same process, with the same configuration (spanmetrics defaults plus two dimensions). The
// command and results are in README.md.

// benchInput returns traces covering `series` distinct series (10 services, series/10 span
// names, two dimensions), `batch` spans per Traces, each series once per pass, in random order.
func benchInput(nSeries, batch int) []ptrace.Traces {
	r := rand.New(rand.NewPCG(1, uint64(nSeries)))
	order := r.Perm(nSeries)
	base := pcommon.NewTimestampFromTime(testStart.Add(-time.Minute))
	var out []ptrace.Traces
	for i := 0; i < len(order); i += batch {
		td := ptrace.NewTraces()
		byService := map[int]ptrace.SpanSlice{}
		for _, s := range order[i:min(i+batch, len(order))] {
			svc := s % 10
			spans, ok := byService[svc]
			if !ok {
				rs := td.ResourceSpans().AppendEmpty()
				a := rs.Resource().Attributes()
				a.PutStr("service.name", fmt.Sprintf("service-%d", svc))
				a.PutStr("service.namespace", "shop")
				a.PutStr("host.name", fmt.Sprintf("host-%d", svc))
				a.PutStr("telemetry.sdk.language", "go")
				a.PutStr("telemetry.sdk.version", "1.30.0")
				ss := rs.ScopeSpans().AppendEmpty()
				ss.Scope().SetName("go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp")
				spans = ss.Spans()
				byService[svc] = spans
			}
			sp := spans.AppendEmpty()
			sp.SetName(fmt.Sprintf("GET /api/v1/resource/%d", s/10))
			sp.SetKind(ptrace.SpanKindServer)
			sp.SetTraceID(pcommon.TraceID{byte(s), byte(s >> 8), byte(s >> 16), 1})
			sp.SetSpanID(pcommon.SpanID{byte(s), byte(s >> 8), byte(s >> 16), 2})
			start := base + pcommon.Timestamp(r.IntN(1e9))
			sp.SetStartTimestamp(start)
			sp.SetEndTimestamp(start + pcommon.Timestamp(r.ExpFloat64()*20e6))
			sp.Attributes().PutStr("http.request.method", "GET")
			sp.Attributes().PutInt("http.response.status_code", 200)
			sp.Attributes().PutStr("url.scheme", "https")
			sp.Attributes().PutStr("server.address", "api.example.com")
		}
		out = append(out, td)
	}
	// Repeat small inputs so that producers do not all hammer the same few Traces.
	for len(out) < 64 {
		out = append(out, out...)
	}
	return out
}

var benchConfig = map[string]any{
	"dimensions":             dims("http.request.method", "http.response.status_code"),
	"metrics_flush_interval": time.Hour,
}

// configFor returns benchConfig for the connector of factory f. For tracemetrics, max_series
// is lifted (the benchmarks measure up to 1M series, above its default cap) and
// series_expiration set beyond the benchmarks' fake clock, which jumps a whole flush
// interval (an hour) at each flush: the series stay, as they do with real time and a steady
// load.
func configFor(f connector.Factory) map[string]any {
	raw := maps.Clone(benchConfig)
	if f.Type() == NewFactory().Type() {
		raw["max_series"] = 0
		raw["series_expiration"] = 24 * time.Hour
	}
	return raw
}

func benchConnectors() []struct {
	name    string
	factory connector.Factory
} {
	return []struct {
		name    string
		factory connector.Factory
	}{
		{"spanmetrics", spanmetricsconnector.NewFactory()},
		{"tracemetrics", NewFactory()},
	}
}

// settleIfOurs waits until tracemetrics has applied every queued batch, so that the time
// measured includes the aggregator's work, not only the producers'.
func settleIfOurs(tb testing.TB, c connector.Traces) {
	if ours, ok := c.(*connectorImp); ok {
		ours.settle(tb)
	}
}

// timeReduce reduces every batch of input once (a warm pass), then times b.N reductions and
// reports the CPU time per span. after, when set, runs after each reduction, before the batch is
// reset: what the aggregator does with a batch besides applying it (learning its names).
func timeReduce(b *testing.B, red *reduce.Reducer, input []ptrace.Traces, spansPerBatch int, after func(*series.Batch)) {
	batch := new(series.Batch)
	step := func(td ptrace.Traces) {
		red.Reduce(batch, td)
		if after != nil {
			after(batch)
		}
		series.Batches.Reset(batch)
	}
	for _, td := range input {
		step(td)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := processCPU()
	for i := 0; i < b.N; i++ {
		step(input[i%len(input)])
	}
	cpu := processCPU() - start
	b.ReportMetric(float64(cpu.Nanoseconds())/(float64(b.N)*float64(spansPerBatch)), "cpu-ns/span")
}

// learnAfter is timeReduce's after for a reducer with span-name layers: the batch's names are
// learned and the templates published, as the aggregator does once it applied the batch.
func learnAfter(c *connectorImp) func(*series.Batch) {
	now := testStart.UnixNano()
	clusters := c.names.Clusterer()
	return func(batch *series.Batch) {
		if clusters != nil {
			clusters.Learn(&batch.Clusters, now)
			clusters.Publish()
		}
	}
}

// appliedConnector builds a connector from raw, not started, and reduces and applies every batch
// of input once, so that every series exists: the aggregator's steady state. It returns the
// reduced batches for the benchmark to apply again.
func appliedConnector(b *testing.B, raw map[string]any, input []ptrace.Traces) (*connectorImp, []*series.Batch) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(b, confmap.NewFromStringMap(raw).Unmarshal(cfg))
	c, err := newConnector(componenttest.NewNopTelemetrySettings(), cfg, consumertest.NewNop(), deps{clock: clockwork.NewFakeClockAt(testStart), chunkPoints: flush.ChunkDataPoints, keyHash: hash.Sum64}, "")
	require.NoError(b, err)
	batches := make([]*series.Batch, len(input))
	for i, td := range input {
		batches[i] = new(series.Batch)
		c.reducer.Reduce(batches[i], td)
		c.agg.Apply(batches[i], testStart.UnixNano())
	}
	return c, batches
}

// timeApply times b.N applications of the pre-reduced batches by c's aggregator and reports the
// CPU time per span.
func timeApply(b *testing.B, c *connectorImp, batches []*series.Batch, spansPerBatch int) {
	b.ReportAllocs()
	b.ResetTimer()
	start := processCPU()
	for i := 0; i < b.N; i++ {
		c.agg.Apply(batches[i%len(batches)], testStart.UnixNano())
	}
	cpu := processCPU() - start
	b.ReportMetric(float64(cpu.Nanoseconds())/(float64(b.N)*float64(spansPerBatch)), "cpu-ns/span")
}

// processCPU returns the CPU time (user+system) of this process so far. Unlike wall time it
// does not grow when other processes compete for the machine's cores.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// consumeParallel has `producers` goroutines call ConsumeTraces n times in total.
func consumeParallel(c connector.Traces, input []ptrace.Traces, producers, n int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := c.ConsumeTraces(context.Background(), input[i%len(input)]); err != nil {
					panic(err)
				}
			}
		}()
	}
	wg.Wait()
}

// measureConsume has producers call ConsumeTraces of r with input b.N times and reports
// wall and CPU time and allocations per span, aggregation included. It warms up first: every
// series exists, and the batch population has reached what this load keeps in flight
// (steady state: nothing allocated).
func measureConsume(b *testing.B, r *running, input []ptrace.Traces, producers int) {
	consumeParallel(r.conn, input, producers, max(len(input), 2_000_000/input[0].SpanCount()))
	settleIfOurs(b, r.conn)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	start, cpuStart := time.Now(), processCPU()
	consumeParallel(r.conn, input, producers, b.N)
	settleIfOurs(b, r.conn)
	elapsed, cpu := time.Since(start), processCPU()-cpuStart
	b.StopTimer()
	runtime.ReadMemStats(&after)
	spans := float64(b.N) * float64(input[0].SpanCount())
	b.ReportMetric(float64(elapsed.Nanoseconds())/spans, "ns/span")
	b.ReportMetric(float64(cpu.Nanoseconds())/spans, "cpu-ns/span")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/spans, "allocs/span")
	require.NoError(b, r.conn.Shutdown(context.Background()))
}

// BenchmarkConsumeTraces measures ns and allocations per span, aggregation included, for
// both connectors at 1, 2, 4 and 8 concurrent producers, ~1k and ~100k series, and batches
// of 10 and 1000 spans per ConsumeTraces call.
func BenchmarkConsumeTraces(b *testing.B) {
	for _, nSeries := range []int{1_000, 100_000} {
		for _, batch := range []int{10, 1000} {
			input := benchInput(nSeries, batch)
			for _, producers := range []int{1, 2, 4, 8} {
				for _, bc := range benchConnectors() {
					name := fmt.Sprintf("series=%dk/batch=%d/producers=%d/%s", nSeries/1000, batch, producers, bc.name)
					b.Run(name, func(b *testing.B) {
						measureConsume(b, startConnector(b, bc.factory, configFor(bc.factory)), input, producers)
					})
				}
			}
		}
	}
}

// BenchmarkIngestStall measures ConsumeTraces latency while a flush of 1M series happens.
// Both connectors hold 1M series (cumulative, so every flush exports all of them). One
// producer offers a 100-span batch every 400µs (250k spans/s) on a fixed schedule; latency is
// measured from each call's scheduled start, so a stalled call also counts the calls queued
// behind it (no coordinated omission). The flush is triggered right after the producer starts
// and the measurement ends when the flush has reached the next consumer.
func BenchmarkIngestStall(b *testing.B) {
	const nSeries = 1_000_000
	const every = 400 * time.Microsecond
	input := benchInput(nSeries, 1000)
	probe := benchInput(10_000, 100)
	for _, bc := range benchConnectors() {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				r := startConnector(b, bc.factory, configFor(bc.factory))
				consumeParallel(r.conn, input, 2, len(input))
				consumeParallel(r.conn, probe, 1, len(probe))
				settleIfOurs(b, r.conn)
				runtime.GC()
				n := len(r.sink.AllMetrics())
				var flushed atomic.Bool
				begin := time.Now()
				go func() {
					r.clock.Advance(r.interval)
					for len(r.sink.AllMetrics()) == n {
						time.Sleep(time.Millisecond)
					}
					flushed.Store(true)
				}()
				var lat, inCall []time.Duration
				var flushTook time.Duration
				next := time.Now()
				// Until the flush is out, and then until every call scheduled before that
				// moment has been made (calls held up by a stall count with their full wait).
				for j := 0; ; j++ {
					if flushTook == 0 && flushed.Load() {
						flushTook = time.Since(begin)
					}
					if flushTook != 0 && next.Sub(begin) > flushTook {
						break
					}
					if d := time.Until(next); d > 0 {
						time.Sleep(d)
					}
					called := time.Now()
					require.NoError(b, r.conn.ConsumeTraces(context.Background(), probe[j%len(probe)]))
					lat = append(lat, time.Since(next))
					inCall = append(inCall, time.Since(called))
					next = next.Add(every)
				}
				q := func(d []time.Duration, p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Microseconds()) }
				for _, d := range [][]time.Duration{lat, inCall} {
					sort.Slice(d, func(x, y int) bool { return d[x] < d[y] })
				}
				b.ReportMetric(q(lat, 0.5), "p50-µs")
				b.ReportMetric(q(lat, 0.99), "p99-µs")
				b.ReportMetric(q(lat, 0.999), "p99.9-µs")
				b.ReportMetric(q(lat, 1), "max-µs")
				// The same calls timed from entry to return, without the wait for the pacing
				// goroutine to be scheduled (see README.md).
				b.ReportMetric(q(inCall, 0.999), "call-p99.9-µs")
				b.ReportMetric(q(inCall, 1), "call-max-µs")
				b.ReportMetric(flushTook.Seconds(), "flush-s")
				b.ReportMetric(float64(len(lat)), "calls")
				require.NoError(b, r.conn.Shutdown(context.Background()))
			}
		})
	}
}

// BenchmarkBytesPerSeries reports heap bytes per series after every series was aggregated and
// flushed twice, in both temporalities (cumulative: the flusher's running totals exist too),
// and flush-peak-bytes/series: the heap while the downstream holds the first export of the
// second flush (spanmetrics: the whole interval's pmetric.Metrics; tracemetrics: its first
// chunk).
//
// With TRACEMETRICS_HEAP_PROFILE_DIR set, each run also writes a heap profile there, taken
// at the bytes/series measurement (go tool pprof -sample_index=inuse_space).
func BenchmarkBytesPerSeries(b *testing.B) {
	for _, size := range []struct {
		name    string
		nSeries int
	}{{"100k", 100_000}, {"1M", 1_000_000}} {
		nSeries := size.nSeries
		input := benchInput(nSeries, 1000)
		for _, temporality := range []string{cumulative, delta} {
			for _, bc := range benchConnectors() {
				cfg := configFor(bc.factory)
				cfg["aggregation_temporality"] = temporality
				name := "series=" + size.name + "/" + strings.ToLower(strings.TrimPrefix(temporality, "AGGREGATION_TEMPORALITY_")) + "/" + bc.name
				b.Run(name, func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						runtime.GC()
						var before, after runtime.MemStats
						runtime.ReadMemStats(&before)
						peak := &heapAtFirstExport{}
						r := startConnectorTo(b, bc.factory, cfg, func(s *consumertest.MetricsSink) consumer.Metrics {
							peak.MetricsSink = s
							return peak
						})
						// Two passes and two flushes: the steady state, where the series of each
						// interval have filled both of tracemetrics' delta buffers in turn.
						for pass := 0; pass < 2; pass++ {
							consumeParallel(r.conn, input, 2, len(input))
							settleIfOurs(b, r.conn)
							peak.heap = 0
							r.flush()
							r.sink.Reset()
						}
						runtime.GC()
						runtime.ReadMemStats(&after)
						b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(nSeries), "bytes/series")
						b.ReportMetric(float64(peak.heap-before.HeapAlloc)/float64(nSeries), "flush-peak-bytes/series")
						if dir := os.Getenv("TRACEMETRICS_HEAP_PROFILE_DIR"); dir != "" {
							writeHeapProfile(b, filepath.Join(dir, strings.ReplaceAll(name, "/", "_")+".pprof"))
						}
						runtime.KeepAlive(input)
						require.NoError(b, r.conn.Shutdown(context.Background()))
					}
				})
			}
		}
	}
}

func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	require.NoError(b, err)
	defer f.Close()
	require.NoError(b, pprof.WriteHeapProfile(f))
}

// heapAtFirstExport records the live heap when the first export arrives, before keeping it.
type heapAtFirstExport struct {
	*consumertest.MetricsSink
	heap uint64
}

func (h *heapAtFirstExport) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	if h.heap == 0 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		h.heap = ms.HeapAlloc
	}
	return h.MetricsSink.ConsumeMetrics(ctx, md)
}

// readOnly is a floor for BenchmarkConsumeTracesFloor: it reads every byte that both
// connectors must read to key a span (service.name, span name, kind, status, timestamps, the
// two dimension values), copying the strings into a scratch buffer as any key builder does, and
// aggregates nothing. With 100k series the input no longer fits in the CPU caches, and these
// reads alone are a large part of each connector's time.
type readOnly struct {
	buf  []byte
	sink uint64
}

func (r *readOnly) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		svc := ""
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
			svc = v.Str()
		}
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			spans := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				sp := spans.At(k)
				b := append(r.buf[:0], svc...)
				b = append(b, sp.Name()...)
				b = append(b, byte(sp.Kind()), byte(sp.Status().Code()))
				r.sink += uint64(sp.EndTimestamp() - sp.StartTimestamp())
				if v, ok := sp.Attributes().Get("http.request.method"); ok {
					b = append(b, v.Str()...)
				}
				if v, ok := sp.Attributes().Get("http.response.status_code"); ok {
					r.sink += uint64(v.Int())
				}
				r.sink += uint64(b[len(b)-1])
				r.buf = b
			}
		}
	}
	return nil
}

func BenchmarkConsumeTracesFloor(b *testing.B) {
	for _, nSeries := range []int{1_000, 100_000} {
		for _, batch := range []int{10, 1000} {
			input := benchInput(nSeries, batch)
			b.Run(fmt.Sprintf("series=%dk/batch=%d/producers=1/read-only", nSeries/1000, batch), func(b *testing.B) {
				r := &readOnly{}
				for _, td := range input {
					_ = r.ConsumeTraces(context.Background(), td)
				}
				b.ResetTimer()
				start := processCPU()
				for i := 0; i < b.N; i++ {
					_ = r.ConsumeTraces(context.Background(), input[i%len(input)])
				}
				cpu := processCPU() - start
				b.ReportMetric(float64(cpu.Nanoseconds())/(float64(b.N)*float64(input[0].SpanCount())), "cpu-ns/span")
			})
		}
	}
}

// BenchmarkReduce measures the producer side alone: spans → deltaBatch, no ring, no aggregator.
func BenchmarkReduce(b *testing.B) {
	for _, nSeries := range []int{1_000, 100_000} {
		for _, batch := range []int{10, 1000} {
			benchmarkReduce(b, nSeries, batch)
		}
	}
}

func benchmarkReduce(b *testing.B, nSeries, batchSize int) {
	{
		input := benchInput(nSeries, batchSize)
		b.Run(fmt.Sprintf("series=%dk/batch=%d", nSeries/1000, batchSize), func(b *testing.B) {
			r := startConnector(b, NewFactory(), configFor(NewFactory()))
			red := r.conn.(*connectorImp).reducer
			batch := new(series.Batch)
			for _, td := range input {
				red.Reduce(batch, td)
				series.Batches.Reset(batch)
			}
			b.ResetTimer()
			start := processCPU()
			for i := 0; i < b.N; i++ {
				red.Reduce(batch, input[i%len(input)])
				series.Batches.Reset(batch)
			}
			cpu := processCPU() - start
			b.ReportMetric(float64(cpu.Nanoseconds())/(float64(b.N)*float64(batchSize)), "cpu-ns/span")
		})
	}
}

// BenchmarkApply measures the aggregator alone: pre-reduced batches folded into the store,
// every series already present (the steady state), no producers running.
func BenchmarkApply(b *testing.B) {
	for _, nSeries := range []int{1_000, 100_000} {
		for _, batchSize := range []int{10, 1000} {
			input := benchInput(nSeries, batchSize)
			b.Run(fmt.Sprintf("series=%dk/batch=%d", nSeries/1000, batchSize), func(b *testing.B) {
				benchApplyWith(b, configFor(NewFactory()), input, batchSize)
			})
		}
	}
}

// flushTimes records, per flush, the flush time the connector stamped on its data points
// and when the first of its exports reached the next consumer.
type flushTimes struct {
	mu      sync.Mutex
	stamps  []pcommon.Timestamp
	arrived []time.Time
}

func (f *flushTimes) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (f *flushTimes) ConsumeMetrics(_ context.Context, md pmetric.Metrics) error {
	now := time.Now()
	// A chunk may start with any metric of a resource.
	var ts pcommon.Timestamp
	switch m := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0); m.Type() {
	case pmetric.MetricTypeSum:
		ts = m.Sum().DataPoints().At(0).Timestamp()
	case pmetric.MetricTypeHistogram:
		ts = m.Histogram().DataPoints().At(0).Timestamp()
	default:
		panic("BUG: unexpected metric type " + m.Type().String())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.stamps); n == 0 || f.stamps[n-1] != ts {
		f.stamps = append(f.stamps, ts)
		f.arrived = append(f.arrived, now)
	}
	return nil
}

// BenchmarkFlushLateness measures how late flushes are while producers keep the connector
// overloaded for a fixed time (real clock, 1s interval, 6s of load, delta temporality,
// 100k series). max-late-ms is the largest delay between two flush timestamps beyond the
// interval (a flush that never came in the run counts up to the run's end), max-delivery-ms
// the largest time from a flush's timestamp to its first export reaching the next consumer.
// Loads: 8 goroutines calling ConsumeTraces as fast as they can (both connectors), and, for
// tracemetrics, 4 goroutines queueing copies of a pre-reduced 2000-series batch, which keeps
// the intake ring full at every drain (the aggregator is the bottleneck).
func BenchmarkFlushLateness(b *testing.B) {
	const interval, duration = time.Second, 6 * time.Second
	input := benchInput(100_000, 1000)
	cases := []struct {
		name      string
		factory   connector.Factory
		saturated bool
	}{
		{"spanmetrics/ConsumeTraces", spanmetricsconnector.NewFactory(), false},
		{"tracemetrics/ConsumeTraces", NewFactory(), false},
		{"tracemetrics/saturated-ring", NewFactory(), true},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				cfg := bc.factory.CreateDefaultConfig()
				raw := configFor(bc.factory)
				raw["metrics_flush_interval"] = interval
				raw["aggregation_temporality"] = delta
				require.NoError(b, confmap.NewFromStringMap(raw).Unmarshal(cfg))
				sink := &flushTimes{}
				conn, err := bc.factory.CreateTracesToMetrics(context.Background(), connectortest.NewNopSettings(bc.factory.Type()), cfg, sink)
				require.NoError(b, err)
				require.NoError(b, conn.Start(context.Background(), componenttestHost{}))
				begin := time.Now()
				var stop atomic.Bool
				var queued atomic.Int64
				var wg sync.WaitGroup
				producers := 8
				if bc.saturated {
					producers = 4
				}
				for p := 0; p < producers; p++ {
					wg.Add(1)
					go func(p int) {
						defer wg.Done()
						if bc.saturated {
							saturate(conn.(*connectorImp), &stop, &queued)
							return
						}
						for j := p; !stop.Load(); j += producers {
							if err := conn.ConsumeTraces(context.Background(), input[j%len(input)]); err != nil {
								panic(err)
							}
						}
					}(p)
				}
				time.Sleep(duration)
				end := time.Now()
				stop.Store(true)
				wg.Wait()
				require.NoError(b, conn.Shutdown(context.Background()))
				sink.mu.Lock()
				late, delivery, prev, flushes := time.Duration(0), time.Duration(0), begin, 0
				for k, ts := range sink.stamps {
					t := ts.AsTime()
					if t.After(end) {
						break // the final flush at Shutdown
					}
					flushes++
					late = max(late, t.Sub(prev)-interval)
					delivery = max(delivery, sink.arrived[k].Sub(t))
					prev = t
				}
				sink.mu.Unlock()
				late = max(late, end.Sub(prev)-interval)
				b.ReportMetric(float64(late)/float64(time.Millisecond), "max-late-ms")
				b.ReportMetric(float64(delivery)/float64(time.Millisecond), "max-delivery-ms")
				b.ReportMetric(float64(flushes), "flushes")
				if ours, ok := conn.(*connectorImp); ok {
					b.ReportMetric(float64(ours.tel.FlushesSkipped.Load()), "skipped")
				}
				b.ReportMetric(float64(duration/interval), "expected-flushes")
			}
		})
	}
}

// saturate queues copies of one pre-reduced batch of 2000 series until stop: much cheaper
// than applying them, so the aggregator finds the ring full at every drain. queued counts the
// batches, each before its Put.
func saturate(c *connectorImp, stop *atomic.Bool, queued *atomic.Int64) {
	tmpl := new(series.Batch)
	tmpl.TS = time.Now().UnixNano()
	c.reducer.Reduce(tmpl, manySeries(2000))
	for !stop.Load() {
		b := c.pipe.Free.Get()
		if b == nil {
			b = new(series.Batch)
		}
		copyBatch(b, tmpl)
		queued.Add(1)
		if err := c.pipe.Queue.Put(context.Background(), b); err != nil {
			panic(err)
		}
	}
}

// BenchmarkApplyOverflow is BenchmarkApply at 100k series in 10 services, batches of 1000
// spans, with each limit set so that 9 spans in 10 go to overflow series: spanmetrics' (one
// per resource) under aggregation_cardinality_limit, the caps' (by span kind and status code,
// their keys built per refused series) under max_series_per_service and max_series; "none"
// resolves every span to its own series.
func BenchmarkApplyOverflow(b *testing.B) {
	const nSeries, batchSize = 100_000, 1000
	input := benchInput(nSeries, batchSize)
	for _, v := range []struct {
		name   string
		limits map[string]any
	}{
		{"none", nil},
		{"aggregation_cardinality_limit", map[string]any{"aggregation_cardinality_limit": nSeries / 100}},
		{"max_series_per_service", map[string]any{"max_series_per_service": nSeries / 100}},
		{"max_series", map[string]any{"max_series": nSeries / 10}},
	} {
		b.Run(v.name, func(b *testing.B) {
			raw := configFor(NewFactory())
			maps.Copy(raw, v.limits)
			c, batches := appliedConnector(b, raw, input)
			var overflow int64
			for k := range c.tel.OverflowSpans {
				overflow += c.tel.OverflowSpans[k].Load()
			}
			if v.limits != nil {
				require.Equal(b, int64(len(input)*batchSize)*9/10, overflow, "9 spans in 10 overflow")
			}
			timeApply(b, c, batches, batchSize)
		})
	}
}
