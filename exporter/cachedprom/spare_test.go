package cachedprom

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"
)

// TestRenderWaitsForTheSparesReader: a due render whose spare a scrape
// still writes to a client waits for that scrape and then writes into the
// spare's mapping, instead of holding a third body; it waits at most as
// long as the last render took (at least render_interval), not at all for
// a small body, and its whole bound again after ingest resumed.
func TestRenderWaitsForTheSparesReader(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.RenderInterval = 2 * time.Second
	e, clock := onFakeClock(t, cfg)
	e.spareWaitMin = 1 // every body is large here
	st := e.newSchedule(clock.Now())
	step := 0
	ingest := func() {
		step++
		require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.SpanmetricsLike(400, step)))
		clock.Advance(2 * cfg.RenderInterval) // past the settle and the pause after a render
	}
	mapping := func(s *render.Snapshot) *byte { return &s.Body(render.BodyText).Gzip[0] }

	ingest()
	e.step(clock.Now(), st)
	ingest()
	e.step(clock.Now(), st) // the first snapshot is the spare now, unread
	read := e.acquire()     // a scrape of the published one, still writing
	ingest()
	e.step(clock.Now(), st) // renders into the spare; retires the one read
	published := e.snapshot.Load()
	require.True(t, read != published)

	ingest()
	assert.Equal(t, sparePoll, e.step(clock.Now(), st), "the render waits for the scrape")
	clock.Advance(cfg.RenderInterval / 2)
	assert.Equal(t, sparePoll, e.step(clock.Now(), st))
	assert.True(t, published == e.snapshot.Load(), "no render while the spare is read")
	want := mapping(read)
	read.Release() // the scrape ends
	assert.Zero(t, e.step(clock.Now(), st))
	require.True(t, published != e.snapshot.Load(), "rendered once the scrape ended")
	assert.Same(t, want, mapping(e.snapshot.Load()), "written into the spare's mapping")
	assert.EqualValues(t, 1, e.telemetry.spareWaits[spareReused].Load())

	// A scrape that outlasts the wait: the render takes a fresh mapping, and
	// the body being read stays whole.
	read = hold(t, e)
	ingest()
	e.step(clock.Now(), st)
	ingest()
	waiting := e.snapshot.Load()
	assert.Equal(t, sparePoll, e.step(clock.Now(), st))
	clock.Advance(max(cfg.RenderInterval, st.lastWork))
	assert.Zero(t, e.step(clock.Now(), st), "at most as long as the last render took, at least render_interval")
	require.True(t, waiting != e.snapshot.Load(), "rendered after the wait")
	assert.NotSame(t, mapping(read), mapping(e.snapshot.Load()))
	assert.Contains(t, textOf(t, read), "calls_total{")
	assert.EqualValues(t, 1, e.telemetry.spareWaits[spareFresh].Load())

	// A small body never waits.
	e.spareWaitMin = spareWaitMinBytes
	_ = hold(t, e)
	ingest()
	e.step(clock.Now(), st)
	before := e.snapshot.Load()
	ingest()
	assert.Zero(t, e.step(clock.Now(), st))
	assert.True(t, before != e.snapshot.Load(), "rendered at once")
	assert.EqualValues(t, 2, e.telemetry.spareWaits[spareReused].Load()+e.telemetry.spareWaits[spareFresh].Load(), "no wait counted for it")

	// A wait cut short because ingest resumed (the render is no longer due)
	// begins anew when the render is due again: it does not count from the
	// old start, which would render at once with a fresh mapping.
	e.spareWaitMin = 1
	read = e.acquire()
	ingest()
	e.step(clock.Now(), st) // retires the one read
	ingest()
	waiting = e.snapshot.Load()
	assert.Equal(t, sparePoll, e.step(clock.Now(), st), "the render waits for the scrape")
	clock.Advance(max(cfg.RenderInterval, st.lastWork) * 3 / 4)
	require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.SpanmetricsLike(400, step)))
	settle := e.step(clock.Now(), st)
	require.Positive(t, settle, "ingest resumed: the render waits for it to pause")
	require.NotEqual(t, sparePoll, settle)
	clock.Advance(settle)
	assert.Equal(t, sparePoll, e.step(clock.Now(), st), "the wait begins anew")
	assert.True(t, waiting == e.snapshot.Load(), "no render while the spare is read")
	want = mapping(read)
	read.Release() // the scrape ends
	assert.Zero(t, e.step(clock.Now(), st))
	require.True(t, waiting != e.snapshot.Load(), "rendered once the scrape ended")
	assert.EqualValues(t, 2, e.telemetry.spareWaits[spareReused].Load())
}

// TestScrapesDuringRendersGetWholeBodies: scrapes racing renders, each of
// which retires the snapshot before it and gives the spare's pages back,
// always get a whole body: a page given back under a reader would read as
// zeros and break the gzip checksum. It is a stress test, so it finds such a
// fault often rather than always; TestRetireFreesOnlyUnreadSnapshots is the
// deterministic check of the rule.
func TestScrapesDuringRendersGetWholeBodies(t *testing.T) {
	const n = 1000 // OTLP series: n/2 calls series
	ours, url := startOurs(t, nil)
	require.NoError(t, ours.ConsumeMetrics(context.Background(), promtest.SpanmetricsLike(n, 0)))
	ours.renderNow()

	stop := make(chan struct{})
	errs := make(chan error, 16)
	var scrapes atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 10 * time.Second}
			defer client.CloseIdleConnections()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := scrapeWhole(client, url, n/2); err != nil {
					errs <- err
					return
				}
				scrapes.Add(1)
			}
		}()
	}
	// Every render retires the snapshot before it, new values or not; new
	// values now and then change the bodies' lengths. 300 renders take about
	// 3 s on the 2-core machine; under the race detector the scrapers starve
	// the renders, and the time bound keeps that run at 10 s, once 20 renders
	// are done: beside the other packages' tests of `go test -race ./...`
	// only 12 were done in 10 s once.
	renders, soft, hard := 0, time.Now().Add(10*time.Second), time.Now().Add(2*time.Minute)
	for ; renders < 300 && (renders < 20 || time.Now().Before(soft)); renders++ {
		require.True(t, time.Now().Before(hard), "only %d renders in 2 minutes", renders)
		if renders%10 == 9 {
			require.NoError(t, ours.ConsumeMetrics(context.Background(), promtest.SpanmetricsLike(n, renders)))
		}
		ours.renderNow()
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.GreaterOrEqual(t, scrapes.Load(), int64(20), "scrapes racing them")
}

// scrapeWhole scrapes url with gzip and checks the body came gzip-encoded,
// inflates whole and lists calls counters.
func scrapeWhole(client *http.Client, url string, calls int) error {
	body, resp, err := promtest.Fetch(client, url, "", true)
	if err != nil {
		return err
	}
	if enc := resp.Header.Get("Content-Encoding"); enc != "gzip" {
		return fmt.Errorf("Content-Encoding %q, want gzip", enc)
	}
	if got := bytes.Count(body, []byte("\ntraces_span_metrics_calls_total{")); got != calls {
		return fmt.Errorf("%d calls series in a body of %d bytes, want %d", got, len(body), calls)
	}
	return nil
}
