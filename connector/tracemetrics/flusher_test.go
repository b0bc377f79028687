package tracemetrics

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// A flush goes downstream in chunks of at most deps.chunkPoints data points, the periodic flushes
// and Shutdown's final one alike, and the chunks together hold exactly the points one
// unchunked export holds (resources split across chunks included).
func TestFlushIsSentInChunks(t *testing.T) {
	for _, temporality := range []string{cumulative, delta} {
		t.Run(temporality, func(t *testing.T) {
			raw := map[string]any{
				"aggregation_temporality": temporality,
				"dimensions":              dims("http.method", "tenant=none"),
				"exemplars":               map[string]any{"enabled": true},
				"events":                  map[string]any{"enabled": true, "dimensions": dims("exception.type")},
				"metrics_flush_interval":  time.Second,
			}
			const chunk = 7
			whole, wholeSink, wholeClock, _ := startOurs(t, raw, true)
			chunked, chunkedSink, chunkedClock, _ := startOursFrom(t, oursWith(func(d *deps) { d.chunkPoints = chunk }), raw, true)

			rWhole, rChunked := newRand(11), newRand(11)
			o := genOptions{services: 5, names: 20, events: true}
			for f := 0; f < 3; f++ {
				for i := 0; i < 5; i++ {
					require.NoError(t, whole.ConsumeTraces(context.Background(), genTraces(rWhole, 100, o)))
					require.NoError(t, chunked.ConsumeTraces(context.Background(), genTraces(rChunked, 100, o)))
				}
				n := len(chunkedSink.AllMetrics())
				want := flushOnce(t, whole, wholeSink, wholeClock, time.Second)
				got := flushOnce(t, chunked, chunkedSink, chunkedClock, time.Second)
				requireChunks(t, chunkedSink.AllMetrics()[n:], chunk, want.DataPointCount())
				requireSamePoints(t, points(t, want, true), points(t, got, true))
			}
			// The final flush: more spans, then Shutdown.
			for i := 0; i < 5; i++ {
				require.NoError(t, whole.ConsumeTraces(context.Background(), genTraces(rWhole, 100, o)))
				require.NoError(t, chunked.ConsumeTraces(context.Background(), genTraces(rChunked, 100, o)))
			}
			nWhole, nChunked := len(wholeSink.AllMetrics()), len(chunkedSink.AllMetrics())
			require.NoError(t, whole.Shutdown(context.Background()))
			require.NoError(t, chunked.Shutdown(context.Background()))
			want := mergeMetrics(wholeSink.AllMetrics()[nWhole:])
			requireChunks(t, chunkedSink.AllMetrics()[nChunked:], chunk, want.DataPointCount())
			requireSamePoints(t, points(t, want, true), points(t, mergeMetrics(chunkedSink.AllMetrics()[nChunked:]), true))
		})
	}
}

// requireChunks checks that every chunk but the last is full and none is larger.
func requireChunks(t *testing.T, chunks []pmetric.Metrics, size, total int) {
	t.Helper()
	require.Greater(t, total, 3*size, "too few points to need several chunks")
	require.Len(t, chunks, (total+size-1)/size)
	for i, md := range chunks {
		if i < len(chunks)-1 {
			require.Equal(t, size, md.DataPointCount(), "chunk %d", i)
		} else {
			require.LessOrEqual(t, md.DataPointCount(), size)
		}
	}
}
