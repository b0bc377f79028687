package cachedprom

import (
	"bytes"
	stdgzip "compress/gzip"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// gunzipOneMember decodes gz as a reader that stops after the first gzip
// member (as curl does) and checks nothing follows it: what such a reader
// gets is the whole body.
func gunzipOneMember(tb testing.TB, gz []byte) []byte {
	tb.Helper()
	br := bytes.NewReader(gz)
	zr, err := stdgzip.NewReader(br)
	require.NoError(tb, err)
	zr.Multistream(false)
	b, err := io.ReadAll(zr)
	require.NoError(tb, err, "the member, its CRC-32 and length check out")
	require.Zero(tb, br.Len(), "nothing follows the first member")
	return b
}

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
		cfg := createDefaultConfig().(*Config)
		cfg.MaxSeries = 0
		store := newSeriesStore(cfg, zap.NewNop())
		if n > 0 {
			store.consume(spanmetricsLike(n, 0), time.Now())
		}
		for _, format := range []string{"text", "openmetrics", "protobuf"} {
			if n > 4000 && format != "protobuf" {
				continue
			}
			t.Run(fmt.Sprintf("series=%d/%s", n, format), func(t *testing.T) {
				var rd renderer
				body := func(dst []byte) []byte {
					switch format {
					case "openmetrics":
						return rd.renderOpenMetrics(dst, store)
					case "protobuf":
						return rd.renderProto(dst, store)
					}
					return rd.renderText(dst, store)
				}
				var single offHeapBuffer
				defer single.free()
				zw, _ := gzip.NewWriterLevel(nil, gzipLevel)
				_, singleLen := rd.renderCompressed(&single, nil, zw, &keepSink{}, body)
				want := gunzipOneMember(t, single.bytes())
				require.Len(t, want, singleLen)

				if format == "protobuf" && n == 24000 {
					require.Greater(t, len(want), 2*segmentSize)
				}
				var first []byte
				var m segmentCompressor
				for _, workers := range []int{2, 3, 8} {
					var gz offHeapBuffer
					length, work, _ := rd.renderSegments(&gz, &m, workers, body)
					assert.Equal(t, singleLen, length)
					assert.Equal(t, want, gunzipOneMember(t, gz.bytes()), "workers=%d", workers)
					assert.Equal(t, want, gunzip(t, gz.bytes()), "workers=%d, klauspost reader", workers)
					assert.Equal(t, single.bytes()[:10], gz.bytes()[:10], "the same gzip header")
					if len(want) > segmentSize {
						assert.Positive(t, work)
						assert.NotEqual(t, single.bytes(), gz.bytes(), "compressed in segments")
					}
					// The segments' dictionaries start empty: a small cost,
					// larger for the protobuf body, whose gzip form is a
					// tenth of the text's (1.7% at 24000 series).
					limit := 1.01
					if format == "protobuf" {
						limit = 1.03
					}
					assert.Less(t, float64(gz.n), limit*float64(single.n)+32)
					if first == nil {
						first = bytes.Clone(gz.bytes())
					} else {
						assert.Equal(t, first, gz.bytes(), "workers=%d gives other bytes", workers)
					}
					gz.free()
				}
			})
		}
		store.close()
	}
}

// TestScrapeOfSegmentsDecodes runs the exporter at several GOMAXPROCS on a
// store whose body is above parallelMinBody. With one processor the body is
// compressed as it always was; with more, the second render (the first that
// knows the body is large) compresses it in segments on several goroutines,
// and a gzip scrape over HTTP, an identity scrape (inflated by the server)
// and the OpenMetrics variant all decode to the one-processor bodies; so
// does curl --compressed, which decodes one gzip member only. The render's
// processor time counts the workers' time.
func TestScrapeOfSegmentsDecodes(t *testing.T) {
	const n = 4000 // about 12 MB of text
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	var wantText, wantOM, singleGzip []byte
	for _, procs := range []int{1, 2, 4} {
		t.Run("GOMAXPROCS="+strconv.Itoa(procs), func(t *testing.T) {
			runtime.GOMAXPROCS(procs)
			e, url := startOurs(t, func(c *Config) {
				c.MaxSeries = 0
				c.RenderInterval = time.Hour
				c.EnableOpenMetrics = true
			})
			require.NoError(t, e.ConsumeMetrics(context.Background(), spanmetricsLike(n, 0)))
			e.renderNow()
			work := e.renderNow()
			snap := hold(t, e)
			require.Greater(t, snap.textLen, parallelMinBody)
			if procs == 1 {
				assert.Zero(t, e.renderer.work, "no workers")
				wantText, wantOM = gunzipOneMember(t, snap.textGzip), gunzipOneMember(t, snap.omGzip)
				singleGzip = bytes.Clone(snap.textGzip)
				return
			}
			require.Positive(t, e.renderer.work)
			assert.GreaterOrEqual(t, work, e.renderer.work, "the workers' time is counted")
			assert.NotEqual(t, singleGzip, snap.textGzip, "compressed in segments")
			assert.Equal(t, wantText, gunzipOneMember(t, snap.textGzip))

			body, resp := scrape(t, url, "", true)
			assert.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
			assert.Equal(t, wantText, body)
			body, resp = scrape(t, url, "", false)
			assert.Empty(t, resp.Header.Get("Content-Encoding"))
			assert.Equal(t, wantText, body)
			body, _ = scrape(t, url, "application/openmetrics-text; version=1.0.0", true)
			assert.Equal(t, wantOM, body)

			// curl decodes only the first of several gzip members: the check that chose one
			// member of deflate segments must run, not be skipped (.ci/run installs curl).
			curl, err := exec.LookPath("curl")
			require.NoError(t, err, "curl is needed for the curl --compressed check")
			out, err := exec.Command(curl, "-sS", "--fail", "--compressed", url).Output()
			require.NoError(t, err)
			assert.Equal(t, wantText, out, "curl --compressed")
		})
	}
}

// TestFirstRenderOfABurstUsesTheCores: the render that first shows a burst
// of new series, after a render of the empty store, compresses in segments
// when the rows now call for it. Deciding on the last body's length alone
// left that render, the one a burst waits for, to one core.
func TestFirstRenderOfABurstUsesTheCores(t *testing.T) {
	e, _ := startOurs(t, func(c *Config) {
		c.MaxSeries = 0
		c.RenderInterval = time.Hour
	})
	e.renderer.workers = 2
	e.renderNow()
	require.Zero(t, e.renderer.work, "the empty store is compressed on the renderer's goroutine")

	const n = 200_000 // a line of about 60 bytes each: about 12 MB of text
	values := make([]string, n)
	for i := range values {
		values[i] = "v" + strconv.Itoa(i)
	}
	require.NoError(t, e.ConsumeMetrics(context.Background(), gaugeBatch("burst", testBase, values...)))
	e.renderNow()
	snap := hold(t, e)
	require.Greater(t, snap.textLen, parallelMinBody)
	require.Positive(t, e.renderer.work, "the first render of the burst is compressed in segments")
	inSegments := gunzipOneMember(t, snap.textGzip)

	e.renderer.workers = 1
	e.renderNow()
	assert.Zero(t, e.renderer.work)
	assert.Equal(t, gunzipOneMember(t, hold(t, e).textGzip), inSegments)
	assert.Equal(t, n, bytes.Count(inSegments, []byte("\nburst{")))
}
