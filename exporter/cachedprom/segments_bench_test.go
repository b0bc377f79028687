//go:build unix

package cachedprom

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkRenderSegments measures a gzip-only render (copy, format,
// compress, publish) with the body compressed on the renderer's goroutine
// (workers=1: what a single processor always does) and in segments on up to
// GOMAXPROCS workers (workers=auto), on the same store in the same run. Run
// it with -cpu 1,2: at -cpu 1 both are the single-core path; at -cpu 2,
// workers=1 is the single-core figure beside the parallel one. cpu-ms/op is
// the process' processor time per render (getrusage), so the cost of the
// segments in processor time shows beside the wall time they save.
func BenchmarkRenderSegments(b *testing.B) {
	for _, n := range benchSeries(b) {
		b.Run("series="+strconv.Itoa(n), func(b *testing.B) {
			ours, _ := startOurs(b, func(c *Config) { c.MaxSeries = 0; c.RenderInterval = time.Hour })
			require.NoError(b, ours.ConsumeMetrics(context.Background(), spanmetricsLike(n, 0)))
			for _, workers := range []int{1, 0} {
				name := "workers=1"
				if workers == 0 {
					name = "workers=auto"
				}
				b.Run(name, func(b *testing.B) {
					ours.renderMu.Lock()
					ours.renderer.workers = workers
					ours.renderMu.Unlock()
					// The first render learns the body's size, the second
					// brings the buffers to their steady size.
					ours.renderNow()
					ours.renderNow()
					var before, after syscall.Rusage
					require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &before))
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						ours.renderNow()
					}
					b.StopTimer()
					require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &after))
					cpu := time.Duration(syscall.TimevalToNsec(after.Utime) - syscall.TimevalToNsec(before.Utime) +
						syscall.TimevalToNsec(after.Stime) - syscall.TimevalToNsec(before.Stime))
					b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/series")
					snap := ours.snapshot.Load()
					b.ReportMetric(float64(snap.textLen), "text-bytes")
					b.ReportMetric(float64(len(snap.textGzip)), "gzip-bytes")
					b.ReportMetric(float64(compressWorkers(workers)), "workers")
				})
			}
		})
	}
}
