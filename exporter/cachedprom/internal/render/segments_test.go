package render

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/mem"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"
)

func TestCRC32Combine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for _, cut := range []int{0, 1, 7, 4096, 65537, len(data) - 1, len(data)} {
		a, b := data[:cut], data[cut:]
		got := crc32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b)))
		assert.Equal(t, crc32.ChecksumIEEE(data), got, "cut at %d", cut)
	}
}

// TestSegmentsDecodeToTheSingleCoreBody renders stores of several sizes,
// from empty to many segments, once as today (the renderer's goroutine)
// and once in segments with several worker counts: every segmented body is
// one gzip member that decodes to the single-core body byte for byte, with
// Go's readers and one stopping after a member, and the compressed bytes do
// not depend on the worker count (so neither does the ETag).
func TestSegmentsDecodeToTheSingleCoreBody(t *testing.T) {
	// 24000 series make a protobuf body of several segments (the text
	// bodies have several at 4000).
	for _, n := range []int{0, 2, 400, 4000, 24000} {
		s := testStore(func(o *store.Options) { o.MaxSeries = 0 })
		if n > 0 {
			s.Consume(promtest.SpanmetricsLike(n, 0), time.Now())
		}
		for _, format := range []string{"text", "openmetrics", "protobuf"} {
			if n > 4000 && format != "protobuf" {
				continue
			}
			t.Run(fmt.Sprintf("series=%d/%s", n, format), func(t *testing.T) {
				var rd Renderer
				body := func(dst []byte) []byte {
					switch format {
					case "openmetrics":
						return rd.OpenMetrics(dst, s)
					case "protobuf":
						return rd.Proto(dst, s)
					}
					return rd.Text(dst, s)
				}
				var single mem.Buffer
				defer single.Free()
				zw, _ := gzip.NewWriterLevel(nil, gzipLevel)
				_, singleLen := rd.out.compressed(&single, nil, zw, &keepSink{}, body)
				want := promtest.GunzipOneMember(t, single.Bytes())
				require.Len(t, want, singleLen)

				if format == "protobuf" && n == 24000 {
					require.Greater(t, len(want), 2*segmentSize)
				}
				var first []byte
				var m segmentCompressor
				for _, workers := range []int{2, 3, 8} {
					var gz mem.Buffer
					length, work, _ := rd.out.segmented(&gz, &m, workers, body)
					assert.Equal(t, singleLen, length)
					assert.Equal(t, want, promtest.GunzipOneMember(t, gz.Bytes()), "workers=%d", workers)
					assert.Equal(t, want, promtest.Gunzip(t, gz.Bytes()), "workers=%d, klauspost reader", workers)
					assert.Equal(t, single.Bytes()[:10], gz.Bytes()[:10], "the same gzip header")
					if len(want) > segmentSize {
						assert.Positive(t, work)
						assert.NotEqual(t, single.Bytes(), gz.Bytes(), "compressed in segments")
					}
					// The segments' dictionaries start empty: a small cost,
					// larger for the protobuf body, whose gzip form is a
					// tenth of the text's (1.7% at 24000 series).
					limit := 1.01
					if format == "protobuf" {
						limit = 1.03
					}
					assert.Less(t, float64(gz.Len()), limit*float64(single.Len())+32)
					if first == nil {
						first = bytes.Clone(gz.Bytes())
					} else {
						assert.Equal(t, first, gz.Bytes(), "workers=%d gives other bytes", workers)
					}
					gz.Free()
				}
			})
		}
		s.Close()
	}
}
