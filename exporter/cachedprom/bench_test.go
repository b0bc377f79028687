package cachedprom

// Benchmarks run cachedprom and the contrib prometheus exporter on identical
// input in the same run; compare the two, not absolute numbers. Series counts
// come from CACHEDPROM_BENCH_SERIES (comma separated, default 10000), because
// the stock exporter needs seconds per scrape at 100k. Commands and results
// are in README.md.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"
)

// benchTarget is one running exporter under benchmark.
type benchTarget struct {
	name    string
	url     string
	consume consumer.Metrics
	ours    *cachedExporter
}

// Two switches for sizes the stock exporter cannot run on this machine
// (1M series): CACHEDPROM_BENCH_STOCK=off leaves it out, and
// CACHEDPROM_BENCH_GZIP_ONLY=1 measures gzip scrapes only, so the
// uncompressed body is never held.
func benchStock() bool    { return os.Getenv("CACHEDPROM_BENCH_STOCK") != "off" }
func benchGzipOnly() bool { return os.Getenv("CACHEDPROM_BENCH_GZIP_ONLY") != "" }

func startTargets(b *testing.B, md pmetric.Metrics) []benchTarget {
	ours, ourURL := startOurs(b, func(c *Config) { c.MaxSeries = 0; c.RenderInterval = time.Second })
	targets := []benchTarget{{name: "cachedprom", url: ourURL, consume: ours, ours: ours}}
	if benchStock() {
		stock, stockURL := promtest.StartStock(b, nil)
		targets = append(targets, benchTarget{name: "prometheusexporter", url: stockURL, consume: stock})
	}
	for _, t := range targets {
		c := pmetric.NewMetrics()
		md.CopyTo(c)
		require.NoError(b, t.consume.ConsumeMetrics(context.Background(), c))
	}
	// Identity clients are part of the benchmark: keep the text body (if it
	// fits render.MaxKeptBody), as a first identity scrape would make the renderer do.
	if !benchGzipOnly() {
		ours.textIdentitySeen.Store(time.Now().UnixNano())
	}
	ours.renderNow()
	return targets
}

func newBenchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 32}, Timeout: 5 * time.Minute}
}

// get performs one scrape and returns the bytes read off the wire.
func get(b *testing.B, c *http.Client, url string, gz bool) int64 {
	req, _ := http.NewRequest(http.MethodGet, url, http.NoBody)
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := c.Do(req)
	if err != nil {
		b.Error(err)
		return 0
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Errorf("status %d", resp.StatusCode)
	}
	return n
}

func reportLatencies(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	b.ReportMetric(float64(pct(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "p99-ms")
}

// BenchmarkScrape measures one scrape end to end over loopback, body read
// and discarded, with and without gzip.
func BenchmarkScrape(b *testing.B) {
	for _, n := range promtest.BenchSeries(b) {
		b.Run("series="+strconv.Itoa(n), func(b *testing.B) {
			targets := startTargets(b, promtest.SpanmetricsLike(n, 0))
			for _, t := range targets {
				for _, gz := range []bool{false, true} {
					if !gz && benchGzipOnly() {
						continue
					}
					b.Run(fmt.Sprintf("%s/gzip=%v", t.name, gz), func(b *testing.B) {
						c := newBenchClient()
						defer c.CloseIdleConnections()
						lat := make([]time.Duration, 0, b.N)
						var bytes int64
						b.ResetTimer()
						for i := 0; i < b.N; i++ {
							t0 := time.Now()
							bytes = get(b, c, t.url, gz)
							lat = append(lat, time.Since(t0))
						}
						b.StopTimer()
						reportLatencies(b, lat)
						b.ReportMetric(float64(bytes), "body-bytes")
					})
				}
			}
		})
	}
}

// BenchmarkRender measures cachedprom's renderer: copy, format, compress,
// publish. mode=gzip-only is the normal case (Prometheus always asks for
// gzip: the body is streamed into the compressor and never held);
// mode=text+gzip also keeps the uncompressed body for identity clients
// (if it fits render.MaxKeptBody; a larger one is rendered as in gzip-only).
// The stock exporter has no separate render; its cost is its scrape.
func BenchmarkRender(b *testing.B) {
	for _, n := range promtest.BenchSeries(b) {
		for _, keepText := range []bool{false, true} {
			mode := "gzip-only"
			if keepText {
				mode = "text+gzip"
			}
			b.Run(fmt.Sprintf("series=%d/mode=%s", n, mode), func(b *testing.B) {
				ours, _ := startOurs(b, func(c *Config) { c.MaxSeries = 0; c.RenderInterval = time.Hour })
				require.NoError(b, ours.ConsumeMetrics(context.Background(), promtest.SpanmetricsLike(n, 0)))
				if keepText {
					ours.textIdentitySeen.Store(time.Now().UnixNano())
				}
				ours.renderNow() // buffers reach their steady size
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					ours.renderNow()
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/series")
				snap := ours.snapshot.Load()
				require.Equal(b, keepText && snap.Body(render.BodyText).Len <= render.MaxKeptBody, snap.Body(render.BodyText).Kept)
				b.ReportMetric(float64(snap.Body(render.BodyText).Len), "text-bytes")
				b.ReportMetric(float64(len(snap.Body(render.BodyText).Gzip)), "gzip-bytes")
				b.ReportMetric(float64(snap.Size()), "held-bytes")
			})
		}
	}
}

// BenchmarkStateBytes measures heap held per series after ingest: the series
// state of each exporter, without any rendered body (cachedprom's snapshot
// is reported by BenchmarkRender as text-bytes and gzip-bytes).
func BenchmarkStateBytes(b *testing.B) {
	for _, n := range promtest.BenchSeries(b) {
		md := promtest.SpanmetricsLike(n, 0)
		for _, name := range []string{"cachedprom", "prometheusexporter"} {
			b.Run(fmt.Sprintf("series=%d/%s", n, name), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					c := pmetric.NewMetrics()
					md.CopyTo(c)
					before := heapInUse()
					var keep any
					if name == "cachedprom" {
						cfg := createDefaultConfig().(*Config)
						cfg.MaxSeries = 0
						s := newStore(cfg, readGates(), zap.NewNop())
						s.Consume(c, time.Now())
						keep = s
					} else {
						stock, _ := promtest.StartStock(b, nil)
						require.NoError(b, stock.ConsumeMetrics(context.Background(), c))
						keep = stock
					}
					after := heapInUse()
					if s, ok := keep.(*store.Store); ok {
						// The big arrays live outside the heap.
						after += int64(s.Sizes().OffHeapBytes)
					}
					// CACHEDPROM_BENCH_HEAPPROFILE=file writes a heap profile
					// while the state is alive, to see what holds the bytes.
					if path := os.Getenv("CACHEDPROM_BENCH_HEAPPROFILE"); path != "" {
						f, err := os.Create(fmt.Sprintf("%s.%s.%d", path, name, n))
						require.NoError(b, err)
						require.NoError(b, pprof.WriteHeapProfile(f))
						require.NoError(b, f.Close())
					}
					// The input stays alive until measured: only what the
					// exporter itself holds is counted.
					runtime.KeepAlive(keep)
					runtime.KeepAlive(c)
					b.ReportMetric(float64(after-before)/float64(n), "state-bytes/series")
					// A RED series is two OTLP series (calls and duration).
					b.ReportMetric(float64(after-before)/float64(n/2), "state-bytes/red-series")
				}
			})
		}
	}
}

func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// BenchmarkIngestWhileScraped measures ConsumeMetrics throughput alone and
// while 10 goroutines scrape /metrics (gzip, as Prometheus does) in a loop.
// One op is one batch of 1000 data points updating existing series.
func BenchmarkIngestWhileScraped(b *testing.B) {
	const batch = 1000
	for _, n := range promtest.BenchSeries(b) {
		b.Run("series="+strconv.Itoa(n), func(b *testing.B) {
			md := promtest.SpanmetricsLike(n, 0)
			targets := startTargets(b, md)
			// Update batches: successive steps of the same series, 1000
			// points each, cut from a newer full set.
			var batches []pmetric.Metrics
			for step := 1; step <= 4; step++ {
				batches = append(batches, splitBatches(promtest.SpanmetricsLike(n, step), batch)...)
			}
			for _, t := range targets {
				// scrapers=0 is ingest alone, the baseline of the other.
				for _, scrapers := range []int{0, 10} {
					b.Run(t.name+"/scrapers="+strconv.Itoa(scrapers), func(b *testing.B) {
						stop := make(chan struct{})
						var scrapes atomic.Int64
						var wg sync.WaitGroup
						for w := 0; w < scrapers; w++ {
							wg.Add(1)
							go func() {
								defer wg.Done()
								c := newBenchClient()
								defer c.CloseIdleConnections()
								for {
									select {
									case <-stop:
										return
									default:
									}
									get(b, c, t.url, true)
									scrapes.Add(1)
								}
							}()
						}
						b.ResetTimer()
						for i := 0; i < b.N; i++ {
							c := pmetric.NewMetrics()
							batches[i%len(batches)].CopyTo(c) // the stock exporter mutates its input
							if err := t.consume.ConsumeMetrics(context.Background(), c); err != nil {
								b.Fatal(err)
							}
						}
						b.StopTimer()
						close(stop)
						wg.Wait()
						b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "points/s")
						b.ReportMetric(float64(scrapes.Load())/b.Elapsed().Seconds(), "scrapes/s")
					})
				}
			}
		})
	}
}

// splitBatches cuts md into batches of about size data points, keeping
// resource and scope.
func splitBatches(md pmetric.Metrics, size int) []pmetric.Metrics {
	var out []pmetric.Metrics
	cur := pmetric.NewMetrics()
	count := 0
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		rm := rms.At(i)
		sm := rm.ScopeMetrics().At(0)
		calls, dur := sm.Metrics().At(0), sm.Metrics().At(1)
		var dcs pmetric.NumberDataPointSlice
		var dds pmetric.HistogramDataPointSlice
		open := false
		for j := 0; j < calls.Sum().DataPoints().Len(); j++ {
			if count >= size {
				out = append(out, cur)
				cur, count, open = pmetric.NewMetrics(), 0, false
			}
			if !open {
				dst := cur.ResourceMetrics().AppendEmpty()
				rm.Resource().CopyTo(dst.Resource())
				dsm := dst.ScopeMetrics().AppendEmpty()
				sm.Scope().CopyTo(dsm.Scope())
				dc := dsm.Metrics().AppendEmpty()
				dc.SetName(calls.Name())
				cs := dc.SetEmptySum()
				cs.SetIsMonotonic(true)
				cs.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				dcs = cs.DataPoints()
				dd := dsm.Metrics().AppendEmpty()
				dd.SetName(dur.Name())
				dd.SetUnit(dur.Unit())
				dh := dd.SetEmptyHistogram()
				dh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				dds = dh.DataPoints()
				open = true
			}
			calls.Sum().DataPoints().At(j).CopyTo(dcs.AppendEmpty())
			dur.Histogram().DataPoints().At(j).CopyTo(dds.AppendEmpty())
			count += 2
		}
	}
	if count > 0 {
		out = append(out, cur)
	}
	return out
}
