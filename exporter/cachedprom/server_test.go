package cachedprom

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/metadata"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"
)

func do(t *testing.T, method, url string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, http.NoBody)
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp
}

func TestScrapeHeadersAndETag(t *testing.T) {
	e, url := startOurs(t, nil)
	require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.MixedMetrics(0, promtest.TestBase)))
	e.renderNow()

	body, resp := promtest.Scrape(t, url, "", false)
	assert.Equal(t, "text/plain; version=0.0.4; charset=utf-8; escaping=underscores", resp.Header.Get("Content-Type"))
	assert.Equal(t, strconv.Itoa(len(body)), resp.Header.Get("Content-Length"))
	assert.Empty(t, resp.Header.Get("Content-Encoding"))
	etag := resp.Header.Get("ETag")
	require.NotEmpty(t, etag)

	// Same snapshot: 304 without a body.
	r := do(t, http.MethodGet, url, map[string]string{"If-None-Match": etag})
	assert.Equal(t, http.StatusNotModified, r.StatusCode)

	// The gzip variant has its own ETag.
	_, gzResp := promtest.Scrape(t, url, "", true)
	assert.NotEqual(t, etag, gzResp.Header.Get("ETag"))
	assert.Equal(t, "gzip", gzResp.Header.Get("Content-Encoding"))
	r = do(t, http.MethodGet, url, map[string]string{"Accept-Encoding": "gzip;q=0, identity"})
	assert.Empty(t, r.Header.Get("Content-Encoding"))

	// New data, new render, new ETag.
	require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.MixedMetrics(1, promtest.TestBase)))
	e.renderNow()
	r = do(t, http.MethodGet, url, map[string]string{"If-None-Match": etag})
	assert.Equal(t, http.StatusOK, r.StatusCode)
	assert.NotEqual(t, etag, r.Header.Get("ETag"))

	// HEAD: headers only; other methods refused.
	r = do(t, http.MethodHead, url, nil)
	assert.Equal(t, http.StatusOK, r.StatusCode)
	assert.NotEqual(t, "0", r.Header.Get("Content-Length"))
	r = do(t, http.MethodPost, url, nil)
	assert.Equal(t, http.StatusMethodNotAllowed, r.StatusCode)
	// Six GET/HEAD requests above were served; the POST is not a scrape.
	assert.EqualValues(t, 6, e.telemetry.scrapes.Load())
}

func TestOpenMetricsOnlyWhenEnabled(t *testing.T) {
	accept := "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
	_, off := startOurs(t, nil)
	_, resp := promtest.Scrape(t, off, accept, false)
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/plain")

	e, on := startOurs(t, func(c *Config) { c.EnableOpenMetrics = true })
	require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.MixedMetrics(0, promtest.TestBase)))
	e.renderNow()
	body, resp := promtest.Scrape(t, on, accept, true)
	assert.Equal(t, "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores", resp.Header.Get("Content-Type"))
	assert.Contains(t, string(body), "# TYPE http_server_requests counter\n")
	assert.Contains(t, string(body), "# EOF\n")
	// Text is still served to text clients.
	body, resp = promtest.Scrape(t, on, "text/plain;version=0.0.4", false)
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	assert.NotContains(t, string(body), "# EOF")
}

func TestFirstScrapeWaitsForFirstRender(t *testing.T) {
	e, url := startOurs(t, func(c *Config) { c.RenderInterval = 200 * time.Millisecond })
	require.Nil(t, e.snapshot.Load())
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = e.ConsumeMetrics(context.Background(), promtest.MixedMetrics(0, promtest.TestBase))
	}()
	body, _ := promtest.Scrape(t, url, "", false)
	assert.Contains(t, string(body), "queue_size{", "the scrape must wait for the first render instead of returning nothing")
}

func TestScrapeOfEmptyExporterIsBounded(t *testing.T) {
	e, url := startOurs(t, func(c *Config) { c.RenderInterval = 10 * time.Millisecond })
	start := time.Now()
	body, _ := promtest.Scrape(t, url, "", false)
	assert.Empty(t, body)
	assert.Less(t, time.Since(start), e.firstRenderWait+2*time.Second)
	// After the wait the renderer publishes an empty snapshot, so later
	// scrapes do not wait at all.
	require.Eventually(t, func() bool { return e.snapshot.Load() != nil }, 5*time.Second, 10*time.Millisecond)
}

func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"":                     false,
		"gzip":                 true,
		"GZIP":                 true,
		"deflate, gzip;q=1.0":  true,
		"gzip;q=0":             false,
		"br, *":                true,
		"identity":             false,
		"x-gzip":               false,
		" gzip ; q=0.5 , zstd": true,
	} {
		assert.Equal(t, want, acceptsGzip(h), "%q", h)
	}
}

func TestIdentityScrapeOfGzipOnlySnapshot(t *testing.T) {
	e, url := startOurs(t, nil)
	require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.MixedMetrics(0, promtest.TestBase)))
	e.renderNow()
	// The identity scrape below makes the render loop replace it.
	snap := hold(t, e)
	require.False(t, snap.Body(render.BodyText).Kept, "no identity client seen yet: only gzip is held")
	require.Nil(t, snap.Body(render.BodyText).Plain)
	require.NotEmpty(t, snap.Body(render.BodyText).Gzip)

	// An identity client still gets the full body, decompressed on the fly,
	// with the right Content-Length...
	body, resp := promtest.Scrape(t, url, "", false)
	assert.Equal(t, textOf(t, snap), string(body))
	assert.Equal(t, strconv.Itoa(snap.Body(render.BodyText).Len), resp.Header.Get("Content-Length"))
	// ...and the renderer keeps the body from then on, same content, same ETag.
	require.Eventually(t, func() bool { return e.snapshot.Load().Body(render.BodyText).Kept }, 5*time.Second, 5*time.Millisecond)
	_, resp2 := promtest.Scrape(t, url, "", false)
	assert.Equal(t, resp.Header.Get("ETag"), resp2.Header.Get("ETag"))
}

// TestIdentityScrapeOfLargeBody: a body above render.MaxKeptBody is never held
// uncompressed, whatever identity clients ask; they get it inflated from the
// gzip form, and their scrapes do not ask for renders.
func TestIdentityScrapeOfLargeBody(t *testing.T) {
	e, url := startOurs(t, nil)
	require.NoError(t, e.ConsumeMetrics(context.Background(), largeBatch()))
	e.renderNow()
	require.Greater(t, e.snapshot.Load().Body(render.BodyText).Len, render.MaxKeptBody)

	body, resp := promtest.Scrape(t, url, "", false)
	snap := hold(t, e)
	assert.Equal(t, textOf(t, snap), string(body))
	assert.Equal(t, strconv.Itoa(snap.Body(render.BodyText).Len), resp.Header.Get("Content-Length"))
	assert.False(t, e.dirty.Load(), "an identity scrape of a body too large to keep asks for no render")

	// Even a render while an identity client is recent keeps only gzip (one
	// that finds the body grown past the limit lets it go:
	// TestKeptBodyLetGoPastTheLimit in internal/render).
	e.renderNow()
	snap = hold(t, e)
	assert.False(t, snap.Body(render.BodyText).Kept)
	assert.Nil(t, snap.Body(render.BodyText).Plain)
	e.renderNow()
	assert.False(t, e.snapshot.Load().Body(render.BodyText).Kept)
	// The first scrape's inflation slot stays taken as long again as that scrape took, which on
	// a busy host can outlast the renders above: until then an identity scrape gets 503.
	var body2 []byte
	require.Eventually(t, func() bool {
		var ok bool
		body2, ok = identityScrape(t, url)
		return ok
	}, 10*time.Second, 10*time.Millisecond, "the inflation slot never came back")
	assert.Equal(t, string(body), string(body2))
}

// largeBatch is RED data whose exposition is larger than render.MaxKeptBody.
func largeBatch() pmetric.Metrics {
	return promtest.RedDeltaBatch(0, 5000, promtest.TestBase, promtest.TestBase.Add(time.Minute))
}

// identityScrape GETs url without gzip; ok is false on a 503.
func identityScrape(t *testing.T, url string) (body []byte, ok bool) {
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 60 * time.Second}).Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode == http.StatusServiceUnavailable {
		return nil, false
	}
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	return body, true
}

// TestOneInflationAtATime: while one client is served a large body
// uncompressed (inflated from the gzip form), another identity client gets
// 503 at once, a gzip client is served, and the slot comes back.
func TestOneInflationAtATime(t *testing.T) {
	e, url := startOurs(t, nil)
	require.NoError(t, e.ConsumeMetrics(context.Background(), largeBatch()))
	e.renderNow()
	require.Greater(t, e.snapshot.Load().Body(render.BodyText).Len, render.MaxKeptBody)
	h := newHandler(e)
	h.inflating <- struct{}{} // a client being served the inflated body

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	assert.Empty(t, rec.Header().Get("ETag"))
	assert.Equal(t, int64(1), e.telemetry.scrapesRefused.Load())

	gz := httptest.NewRequest(http.MethodGet, url, nil)
	gz.Header.Set("Accept-Encoding", "gzip")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, gz)
	assert.Equal(t, http.StatusOK, rec.Code, "gzip clients need no inflation")

	<-h.inflating
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, textOf(t, hold(t, e)), rec.Body.String())
	require.Eventually(t, func() bool { return len(h.inflating) == 0 }, 5*time.Second, time.Millisecond,
		"the served scrape gives its slot back after as long again as it took")
}

// TestScrapeIgnoresStoreLock holds the store lock with a long ingest, one
// stopped inside the store by its logger, and scrapes: the handler must not
// need it.
func TestScrapeIgnoresStoreLock(t *testing.T) {
	// The store logs, holding its lock, a metric whose type conflicts with
	// its family's, at debug level: a logger that waits there holds the lock.
	held, release := make(chan struct{}), make(chan struct{})
	set := exportertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(&waitingCore{entered: held, release: release})
	e, url := startOursWith(t, set, nil)
	require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.MixedMetrics(0, promtest.TestBase)))
	e.renderNow()
	ingested := make(chan struct{})
	go func() {
		defer close(ingested)
		conflict := promtest.GaugeBatch("queue_size", promtest.TestBase, "a")
		conflict.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).SetEmptyHistogram()
		assert.NoError(t, e.ConsumeMetrics(context.Background(), conflict))
	}()
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the ingest never stopped inside the store")
	}
	defer func() {
		close(release)
		<-ingested
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		body, _ := promtest.Scrape(t, url, "", true)
		assert.Contains(t, string(body), "queue_size{")
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a scrape waited for the store lock")
	}
}

// TestConcurrentScrapesLimited: beyond max_concurrent_scrapes in flight, a
// scrape gets 503 at once (and is counted); a freed slot serves again.
func TestConcurrentScrapesLimited(t *testing.T) {
	e, url := startOurs(t, func(c *Config) { c.MaxConcurrentScrapes = 2 })
	require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.GaugeBatch("temp", promtest.TestBase, "a")))
	e.renderNow()
	h := newHandler(e)
	h.inflight <- struct{}{}
	h.inflight <- struct{}{} // two scrapes in flight
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, int64(1), e.telemetry.scrapesRefused.Load())
	<-h.inflight
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Contains(t, rec.Body.String(), "temp{")
	assert.Len(t, h.inflight, 1, "the served scrape gave its slot back")
}

// waitingCore is a zap core that takes every entry and, at the first debug
// entry written, says so on entered and waits for release: a logger that
// stops its caller where it logs.
type waitingCore struct {
	entered, release chan struct{}
	once             sync.Once
}

func (c *waitingCore) Enabled(zapcore.Level) bool { return true }

func (c *waitingCore) With([]zapcore.Field) zapcore.Core { return c }

func (c *waitingCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	return ce.AddCore(e, c)
}

func (c *waitingCore) Write(e zapcore.Entry, _ []zapcore.Field) error {
	if e.Level != zapcore.DebugLevel {
		return nil
	}
	c.once.Do(func() {
		close(c.entered)
		<-c.release
	})
	return nil
}

func (c *waitingCore) Sync() error { return nil }
