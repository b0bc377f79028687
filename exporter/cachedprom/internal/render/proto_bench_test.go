package render

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/mem"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"
)

// BenchmarkRenderProto renders one store's text body and its protobuf body
// alternately within each iteration, both gzip-only on one goroutine as the
// renderer does, so both meet the same load. It reports each one's wall
// time, heap allocated per render and body sizes.
func BenchmarkRenderProto(b *testing.B) {
	for _, n := range promtest.BenchSeries(b) {
		b.Run("series="+strconv.Itoa(n), func(b *testing.B) {
			s := testStore(func(o *store.Options) { o.MaxSeries = 0 }, promtest.SpanmetricsLike(n, 0))
			defer s.Close()
			r := &Snapshots{Workers: 1}
			var err error
			r.zw, err = gzip.NewWriterLevel(nil, gzipLevel)
			require.NoError(b, err)
			var gz [numBodies]mem.Buffer
			defer func() {
				for i := range gz {
					gz[i].Free()
				}
			}()
			renders := [...]func([]byte, *store.Store) []byte{BodyText: r.rd.Text, BodyProto: r.rd.Proto}
			var ms runtime.MemStats
			render := func(which Body) (time.Duration, uint64, int) {
				runtime.ReadMemStats(&ms)
				allocBefore := ms.TotalAlloc
				began := time.Now()
				_, _, length := r.encode(which, nil, &gz[which], false, func(dst []byte) []byte { return renders[which](dst, s) })
				took := time.Since(began)
				runtime.ReadMemStats(&ms)
				return took, ms.TotalAlloc - allocBefore, length
			}
			for _, which := range []Body{BodyText, BodyProto, BodyText, BodyProto} {
				render(which) // buffers to their steady size
			}
			var wall [numBodies]time.Duration
			var alloc [numBodies]uint64
			var length [numBodies]int
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, which := range []Body{BodyText, BodyProto} {
					w, a, l := render(which)
					wall[which] += w
					alloc[which] += a
					length[which] = l
				}
			}
			b.StopTimer()
			per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(per(wall[BodyText]), "ms-text")
			b.ReportMetric(per(wall[BodyProto]), "ms-proto")
			b.ReportMetric(float64(wall[BodyProto])/float64(wall[BodyText]), "proto/text")
			b.ReportMetric(float64(alloc[BodyText])/float64(b.N)/1e6, "alloc-MB-text")
			b.ReportMetric(float64(alloc[BodyProto])/float64(b.N)/1e6, "alloc-MB-proto")
			b.ReportMetric(float64(length[BodyText]), "text-bytes")
			b.ReportMetric(float64(len(gz[BodyText].Bytes())), "text-gzip-bytes")
			b.ReportMetric(float64(length[BodyProto]), "proto-bytes")
			b.ReportMetric(float64(len(gz[BodyProto].Bytes())), "proto-gzip-bytes")
		})
	}
}
