//go:build unix

package cachedprom

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"
)

// BenchmarkRenderSegments measures gzip-only renders (copy, format,
// compress, publish) of one store, alternating within each iteration a
// render with the body compressed on the renderer's goroutine (workers=1:
// what a single processor always does) and one in segments on up to
// GOMAXPROCS workers (auto), so both meet the same load on a shared
// machine. Run it with -cpu 1,2: at -cpu 1 both are the single-core path;
// at -cpu 2 the single-core figure stands beside the parallel one. It
// reports each variant's wall time and the process' processor time
// (getrusage) per render, so the segments' cost in processor time shows
// beside the wall time they save, and auto/1, the ratio of wall times.
// own-ms-auto is the renderer goroutine's own time in the segmented render
// (its wall time less its waits for the workers): what it does alone, one
// goroutine, bounds the render's wall time from below however many cores
// the workers get.
func BenchmarkRenderSegments(b *testing.B) {
	for _, n := range promtest.BenchSeries(b) {
		b.Run("series="+strconv.Itoa(n), func(b *testing.B) {
			ours, _ := startOurs(b, func(c *Config) { c.MaxSeries = 0; c.RenderInterval = time.Hour })
			require.NoError(b, ours.ConsumeMetrics(context.Background(), promtest.SpanmetricsLike(n, 0)))
			renderOnce := func(workers int) (wall, cpu, own time.Duration, gzipBytes int) {
				ours.renderMu.Lock()
				ours.renderer.Workers = workers
				ours.renderMu.Unlock()
				var before, after syscall.Rusage
				require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &before))
				began := time.Now()
				ours.renderNow()
				wall = time.Since(began)
				require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &after))
				cpu = time.Duration(syscall.TimevalToNsec(after.Utime) - syscall.TimevalToNsec(before.Utime) +
					syscall.TimevalToNsec(after.Stime) - syscall.TimevalToNsec(before.Stime))
				ours.renderMu.Lock()
				own = wall - ours.renderer.Waited()
				ours.renderMu.Unlock()
				return wall, cpu, own, len(ours.snapshot.Load().Body(render.BodyText).Gzip)
			}
			// The first render learns the body's size, the next ones bring
			// both variants' buffers to their steady size.
			renderOnce(1)
			renderOnce(1)
			renderOnce(0)
			var wall, cpu, own [2]time.Duration
			var gzipBytes [2]int
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for v, workers := range []int{1, 0} {
					w, c, o, g := renderOnce(workers)
					wall[v] += w
					cpu[v] += c
					own[v] += o
					gzipBytes[v] = g
				}
			}
			b.StopTimer()
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(ms(wall[0]), "ms-1worker")
			b.ReportMetric(ms(cpu[0]), "cpu-ms-1worker")
			b.ReportMetric(ms(wall[1]), "ms-auto")
			b.ReportMetric(ms(cpu[1]), "cpu-ms-auto")
			b.ReportMetric(ms(own[1]), "own-ms-auto")
			b.ReportMetric(float64(wall[1])/float64(wall[0]), "auto/1")
			b.ReportMetric(float64(render.CompressWorkers(0)), "workers-auto")
			b.ReportMetric(float64(gzipBytes[0]), "gzip-bytes-1worker")
			b.ReportMetric(float64(gzipBytes[1]), "gzip-bytes-auto")
			b.ReportMetric(float64(ours.snapshot.Load().Body(render.BodyText).Len), "text-bytes")
		})
	}
}
