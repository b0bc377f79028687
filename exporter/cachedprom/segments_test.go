package cachedprom

import (
	"bytes"
	"context"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"
)

// TestScrapeOfSegmentsDecodes runs the exporter at several GOMAXPROCS on a
// store whose body is above render.ParallelMinBody. With one processor the body is
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
			require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.SpanmetricsLike(n, 0)))
			e.renderNow()
			work := e.renderNow()
			snap := hold(t, e)
			require.Greater(t, snap.Body(render.BodyText).Len, render.ParallelMinBody)
			if procs == 1 {
				assert.Zero(t, e.renderer.Work(), "no workers")
				wantText, wantOM = promtest.GunzipOneMember(t, snap.Body(render.BodyText).Gzip), promtest.GunzipOneMember(t, snap.Body(render.BodyOpenMetrics).Gzip)
				singleGzip = bytes.Clone(snap.Body(render.BodyText).Gzip)
				return
			}
			require.Positive(t, e.renderer.Work())
			assert.GreaterOrEqual(t, work, e.renderer.Work(), "the workers' time is counted")
			assert.NotEqual(t, singleGzip, snap.Body(render.BodyText).Gzip, "compressed in segments")
			assert.Equal(t, wantText, promtest.GunzipOneMember(t, snap.Body(render.BodyText).Gzip))

			body, resp := promtest.Scrape(t, url, "", true)
			assert.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
			assert.Equal(t, wantText, body)
			body, resp = promtest.Scrape(t, url, "", false)
			assert.Empty(t, resp.Header.Get("Content-Encoding"))
			assert.Equal(t, wantText, body)
			body, _ = promtest.Scrape(t, url, "application/openmetrics-text; version=1.0.0", true)
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
	e.renderer.Workers = 2
	e.renderNow()
	require.Zero(t, e.renderer.Work(), "the empty store is compressed on the renderer's goroutine")

	const n = 200_000 // a line of about 60 bytes each: about 12 MB of text
	values := make([]string, n)
	for i := range values {
		values[i] = "v" + strconv.Itoa(i)
	}
	require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.GaugeBatch("burst", promtest.TestBase, values...)))
	e.renderNow()
	snap := hold(t, e)
	require.Greater(t, snap.Body(render.BodyText).Len, render.ParallelMinBody)
	require.Positive(t, e.renderer.Work(), "the first render of the burst is compressed in segments")
	inSegments := promtest.GunzipOneMember(t, snap.Body(render.BodyText).Gzip)

	e.renderer.Workers = 1
	e.renderNow()
	assert.Zero(t, e.renderer.Work())
	assert.Equal(t, promtest.GunzipOneMember(t, hold(t, e).Body(render.BodyText).Gzip), inSegments)
	assert.Equal(t, n, bytes.Count(inSegments, []byte("\nburst{")))
}
