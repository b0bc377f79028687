package cachedprom

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// BenchmarkRenderProto renders one store's text body and its protobuf body
// alternately within each iteration, both gzip-only on one goroutine as the
// renderer does, so both meet the same load. It reports each one's wall
// time, heap allocated per render and body sizes.
func BenchmarkRenderProto(b *testing.B) {
	for _, n := range benchSeries(b) {
		b.Run("series="+strconv.Itoa(n), func(b *testing.B) {
			cfg := createDefaultConfig().(*Config)
			cfg.MaxSeries = 0
			s := newSeriesStore(cfg, zap.NewNop())
			s.consume(spanmetricsLike(n, 0), time.Now())
			defer s.close()
			r := &snapshotRenderer{store: s, workers: 1}
			var err error
			r.zw, err = gzip.NewWriterLevel(nil, gzipLevel)
			require.NoError(b, err)
			var gz [numBodies]offHeapBuffer
			defer func() {
				for i := range gz {
					gz[i].free()
				}
			}()
			renders := [...]func([]byte, *seriesStore) []byte{bodyText: r.rd.renderText, bodyProto: r.rd.renderProto}
			var ms runtime.MemStats
			render := func(which int) (time.Duration, uint64, int) {
				runtime.ReadMemStats(&ms)
				allocBefore := ms.TotalAlloc
				began := time.Now()
				_, _, length := r.body(which, nil, &gz[which], false, renders[which])
				took := time.Since(began)
				runtime.ReadMemStats(&ms)
				return took, ms.TotalAlloc - allocBefore, length
			}
			for _, which := range []int{bodyText, bodyProto, bodyText, bodyProto} {
				render(which) // buffers to their steady size
			}
			var wall [numBodies]time.Duration
			var alloc [numBodies]uint64
			var length [numBodies]int
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, which := range []int{bodyText, bodyProto} {
					w, a, l := render(which)
					wall[which] += w
					alloc[which] += a
					length[which] = l
				}
			}
			b.StopTimer()
			per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(per(wall[bodyText]), "ms-text")
			b.ReportMetric(per(wall[bodyProto]), "ms-proto")
			b.ReportMetric(float64(wall[bodyProto])/float64(wall[bodyText]), "proto/text")
			b.ReportMetric(float64(alloc[bodyText])/float64(b.N)/1e6, "alloc-MB-text")
			b.ReportMetric(float64(alloc[bodyProto])/float64(b.N)/1e6, "alloc-MB-proto")
			b.ReportMetric(float64(length[bodyText]), "text-bytes")
			b.ReportMetric(float64(len(gz[bodyText].bytes())), "text-gzip-bytes")
			b.ReportMetric(float64(length[bodyProto]), "proto-bytes")
			b.ReportMetric(float64(len(gz[bodyProto].bytes())), "proto-gzip-bytes")
		})
	}
}
