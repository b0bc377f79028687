package cachedprom

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
)

func TestPacerGivesEachClientItsTurns(t *testing.T) {
	clock := clockwork.NewFakeClockAt(promtest.TestBase)
	p := newPacer(time.Second, clock)
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	turn := func(addr netip.Addr) time.Duration {
		d, ok := p.reserve(addr)
		require.True(t, ok, "refused after %s", d)
		return d
	}

	assert.Zero(t, turn(a), "a first scrape is served at once")
	assert.Equal(t, time.Second, turn(a), "the next one waits a whole interval")
	assert.Equal(t, 2*time.Second, turn(a), "scrapes arriving together take turns")
	assert.Zero(t, turn(b), "another address has turns of its own")

	clock.Advance(2500 * time.Millisecond)
	assert.Equal(t, 500*time.Millisecond, turn(a), "the rest of the interval after the last turn")
	clock.Advance(10 * time.Second)
	assert.Zero(t, turn(a), "a client back after a pause is served at once")
	assert.Equal(t, 1, pacerClients(p), "addresses whose turn has passed are forgotten")
}

// TestPacerRefusesBeyondItsQueue: an address may hold pacerMaxAhead turns
// ahead of now; one more scrape is refused without taking a turn, so the
// address's queue, and the wait of every client sharing it, stay bounded.
func TestPacerRefusesBeyondItsQueue(t *testing.T) {
	clock := clockwork.NewFakeClockAt(promtest.TestBase)
	p := newPacer(time.Second, clock)
	a := netip.MustParseAddr("192.0.2.1")
	for i := range pacerMaxAhead {
		d, ok := p.reserve(a)
		require.True(t, ok, "turn %d", i)
		assert.Equal(t, time.Duration(i)*time.Second, d)
	}
	d, ok := p.reserve(a)
	assert.False(t, ok, "a turn beyond the queue")
	assert.Equal(t, time.Duration(pacerMaxAhead)*time.Second, d, "the wait until the last turn taken")
	d, ok = p.reserve(a)
	assert.False(t, ok, "a refusal took no turn")
	assert.Equal(t, time.Duration(pacerMaxAhead)*time.Second, d)

	clock.Advance(time.Second)
	d, ok = p.reserve(a)
	assert.True(t, ok, "a turn is free again once one has passed")
	assert.Equal(t, time.Duration(pacerMaxAhead-1)*time.Second, d)
}

// TestScrapeWaitsForItsTurn serves scrapes through the handler on a fake
// clock: a second GET from one address within min_scrape_interval is held
// until the interval has passed and then served the snapshot; another
// address, HEAD and a client that gives up are not held.
func TestScrapeWaitsForItsTurn(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.MinScrapeInterval = time.Second
	e, clock := onFakeClock(t, cfg)
	require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.GaugeBatch("temp", clock.Now(), "a")))
	e.renderNow()
	h := newHandler(e)

	get := func(method, addr string, ctx context.Context) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(ctx, method, "/metrics", http.NoBody)
		req.RemoteAddr = addr
		req.Header.Set("Accept-Encoding", "gzip")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	first := get(http.MethodGet, "192.0.2.1:40000", context.Background())
	require.Equal(t, http.StatusOK, first.Code)
	zr, err := gzip.NewReader(bytes.NewReader(first.Body.Bytes()))
	require.NoError(t, err)
	text, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.Contains(t, string(text), `temp{`)

	done := make(chan *httptest.ResponseRecorder, 1)
	go func() { done <- get(http.MethodGet, "192.0.2.1:40001", context.Background()) }()
	waitCtx, cancelWait := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelWait()
	require.NoError(t, clock.BlockUntilContext(waitCtx, 1), "the second scrape did not wait")
	assert.Equal(t, int64(1), e.telemetry.scrapesPaced.Load())
	select {
	case <-done:
		t.Fatal("served before its turn")
	default:
	}

	other := get(http.MethodGet, "192.0.2.2:40000", context.Background())
	assert.Equal(t, http.StatusOK, other.Code, "another address is not held")
	head := get(http.MethodHead, "192.0.2.1:40002", context.Background())
	assert.Equal(t, http.StatusOK, head.Code, "HEAD sends no body and is not held")

	clock.Advance(time.Second)
	second := <-done
	assert.Equal(t, http.StatusOK, second.Code)
	assert.Equal(t, first.Body.String(), second.Body.String())

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	gone := get(http.MethodGet, "192.0.2.1:40003", ctx)
	assert.Empty(t, gone.Body.String(), "a client that gave up is sent nothing")
	assert.Equal(t, int64(2), e.telemetry.scrapesPaced.Load())
	assert.Equal(t, int64(4), e.telemetry.scrapes.Load(), "the one that gave up is not counted as served")

	// The address now holds turns up to two intervals ahead (the one served
	// and the one given up): two more wait, the next is refused at once.
	waiting := make(chan *httptest.ResponseRecorder, 2)
	for i := range 2 {
		go func() { waiting <- get(http.MethodGet, "192.0.2.1:4100"+strconv.Itoa(i), context.Background()) }()
	}
	require.NoError(t, clock.BlockUntilContext(waitCtx, 2), "two scrapes wait for their turns")
	over := make(chan *httptest.ResponseRecorder, 1)
	go func() { over <- get(http.MethodGet, "192.0.2.1:41009", context.Background()) }()
	var refused *httptest.ResponseRecorder
	select {
	case refused = <-over:
	case <-waitCtx.Done():
		t.Fatal("a scrape beyond the queue was queued, not refused")
	}
	assert.Equal(t, http.StatusServiceUnavailable, refused.Code, "beyond the queue")
	assert.NotEmpty(t, refused.Header().Get("Retry-After"))
	assert.Equal(t, int64(1), e.telemetry.scrapesRefused.Load())
	clock.Advance(4 * time.Second)
	for range 2 {
		assert.Equal(t, http.StatusOK, (<-waiting).Code, "the queued scrapes are served in turn")
	}
}

// TestClientInALoopIsPaced scrapes a running exporter in a loop, on one
// connection and on a new connection per scrape: either way the loop gets at
// most one body per min_scrape_interval.
func TestClientInALoopIsPaced(t *testing.T) {
	const interval = 100 * time.Millisecond
	for _, keepAlive := range []bool{true, false} {
		t.Run(map[bool]string{true: "one connection", false: "connection per scrape"}[keepAlive], func(t *testing.T) {
			e, url := startOurs(t, func(c *Config) { c.MinScrapeInterval = interval })
			require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.GaugeBatch("temp", time.Now(), "a")))
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: !keepAlive}}
			t.Cleanup(client.CloseIdleConnections)

			start := time.Now()
			var served int
			for time.Since(start) < 10*interval {
				resp, err := client.Get(url)
				require.NoError(t, err)
				_, err = io.Copy(io.Discard, resp.Body)
				require.NoError(t, err)
				require.NoError(t, resp.Body.Close())
				require.Equal(t, http.StatusOK, resp.StatusCode)
				served++
			}
			elapsed := time.Since(start)
			assert.LessOrEqual(t, served, int(elapsed/interval)+1, "in %s", elapsed)
			// A request that reaches the server after its turn is served
			// without waiting: on a loaded host the client or the server
			// can stall past the interval between two scrapes, so not
			// every scrape after the first need have waited, but a loop
			// that asks again as soon as it has its answer mostly waits.
			paced := e.telemetry.scrapesPaced.Load()
			assert.LessOrEqual(t, paced, int64(served-1), "the first scrape does not wait")
			assert.GreaterOrEqual(t, 2*paced, int64(served-1), "most scrapes after the first waited")
		})
	}
}

// pacerClients returns the number of addresses the pacer remembers.
func pacerClients(p *pacer) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.next)
}
