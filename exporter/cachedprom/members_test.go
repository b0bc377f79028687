package cachedprom

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// gzipMembers returns the decoded content of each member of a gzip stream.
func gzipMembers(tb testing.TB, gz []byte) [][]byte {
	tb.Helper()
	br := bytes.NewReader(gz)
	zr, err := gzip.NewReader(br)
	require.NoError(tb, err)
	var out [][]byte
	for {
		zr.Multistream(false)
		b, err := io.ReadAll(zr)
		require.NoError(tb, err)
		out = append(out, b)
		if err := zr.Reset(br); err == io.EOF {
			return out
		} else {
			require.NoError(tb, err)
		}
	}
}

// TestMembersDecodeToTheSingleCoreBody renders stores of several sizes, from
// empty to many members, once as today (one member, the renderer's
// goroutine) and once in members with several worker counts: every member
// body decodes to the single-core body byte for byte, and the compressed
// bytes do not depend on the worker count (so neither does the ETag).
func TestMembersDecodeToTheSingleCoreBody(t *testing.T) {
	for _, n := range []int{0, 2, 400, 4000} {
		cfg := createDefaultConfig().(*Config)
		cfg.MaxSeries = 0
		store := newSeriesStore(cfg, zap.NewNop())
		if n > 0 {
			store.consume(spanmetricsLike(n, 0), time.Now())
		}
		for _, om := range []bool{false, true} {
			t.Run(fmt.Sprintf("series=%d/openmetrics=%v", n, om), func(t *testing.T) {
				var rd renderer
				body := func(dst []byte) []byte {
					if om {
						return rd.renderOpenMetrics(dst, store)
					}
					return rd.renderText(dst, store)
				}
				var single offHeapBuffer
				defer single.free()
				zw, _ := gzip.NewWriterLevel(nil, gzipLevel)
				_, singleLen := rd.renderCompressed(&single, nil, zw, &keepSink{}, body)
				want := gunzip(t, single.bytes())
				require.Len(t, want, singleLen)
				require.Len(t, gzipMembers(t, single.bytes()), 1)

				var first []byte
				var m memberCompressor
				for _, workers := range []int{2, 3, 8} {
					var gz offHeapBuffer
					length, work, _ := rd.renderMembers(&gz, &m, workers, body)
					assert.Equal(t, singleLen, length)
					assert.Equal(t, want, gunzip(t, gz.bytes()), "workers=%d", workers)
					members := gzipMembers(t, gz.bytes())
					// Members of at least memberSize bytes, except the last.
					assert.LessOrEqual(t, len(members), len(want)/memberSize+1)
					if len(want) > 2*memberSize {
						assert.Greater(t, len(members), 1)
					}
					for i, mb := range members[:len(members)-1] {
						assert.GreaterOrEqual(t, len(mb), memberSize, "member %d", i)
					}
					assert.Positive(t, work)
					// The members' dictionaries start empty: a small cost.
					assert.Less(t, float64(gz.n), 1.01*float64(single.n)+float64(len(members)*18))
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

// TestScrapeOfMembersDecodes runs the exporter at several GOMAXPROCS on a
// store whose body is above parallelMinBody. With one processor the body is
// one member, compressed as it always was; with more, the second render (the
// first that knows the body is large) compresses members on several
// goroutines, and a gzip scrape over HTTP, an identity scrape (inflated by
// the server) and the OpenMetrics variant all decode to the one-processor
// bodies. The render's processor time counts the workers' time.
func TestScrapeOfMembersDecodes(t *testing.T) {
	const n = 4000 // about 12 MB of text
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	var wantText, wantOM []byte
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
			snap := e.snapshot.Load()
			require.Greater(t, snap.textLen, parallelMinBody)
			members := gzipMembers(t, snap.textGzip)
			if procs == 1 {
				assert.Len(t, members, 1)
				wantText, wantOM = gunzip(t, snap.textGzip), gunzip(t, snap.omGzip)
				return
			}
			assert.Greater(t, len(members), 1)
			assert.Greater(t, len(gzipMembers(t, snap.omGzip)), 1)
			assert.GreaterOrEqual(t, work, e.renderer.work, "the workers' time is counted")
			require.Positive(t, e.renderer.work)

			body, resp := scrape(t, url, "", true)
			assert.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
			assert.Equal(t, wantText, body)
			body, resp = scrape(t, url, "", false)
			assert.Empty(t, resp.Header.Get("Content-Encoding"))
			assert.Equal(t, wantText, body)
			body, _ = scrape(t, url, "application/openmetrics-text; version=1.0.0", true)
			assert.Equal(t, wantOM, body)
		})
	}
}
