package solo

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// Scrapers are clients scraping one /metrics endpoint, each in a loop: every period (the
// Prometheus way) or back to back (period 0, the way a fleet of misconfigured scrapers or a
// dashboard refresh storm behaves). Unlike harness.Scraper, they count every HTTP status, because
// an in-flight limit answering 503 is a result here, not a failure.
type Scrapers struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	lat   []time.Duration
	hdr   []time.Duration // time to the headers of the same scrapes as lat
	stats ScrapeStats
}

// StartScrapers starts clients scraping url until End, each asking for gzip or not, every period
// or back to back (0), each scrape given timeout.
func StartScrapers(ctx context.Context, url string, clients int, gzip bool, period, timeout time.Duration) *Scrapers {
	ctx, cancel := context.WithCancel(ctx)
	s := &Scrapers{cancel: cancel, stats: ScrapeStats{Clients: clients, Gzip: gzip}}
	client := &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: clients},
	}
	for range clients {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for ctx.Err() == nil {
				start := time.Now()
				s.scrapeOnce(ctx, client, url, gzip)
				if period <= 0 {
					continue
				}
				select {
				case <-ctx.Done():
				case <-time.After(period - time.Since(start)):
				}
			}
		}()
	}
	return s
}

func (s *Scrapers) scrapeOnce(ctx context.Context, client *http.Client, url string, gzip bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return
	}
	req.Header.Set("Accept", harness.PrometheusAccept)
	if gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	} else {
		req.Header.Set("Accept-Encoding", "identity")
	}
	start := time.Now()
	resp, err := client.Do(req)
	headers := time.Since(start)
	var (
		n     int64
		empty bool
	)
	if err == nil {
		var head headWriter
		n, err = io.Copy(&head, resp.Body)
		resp.Body.Close()
		empty = n == 0 || resp.Header.Get("Content-Encoding") == "gzip" && inflatesToNothing(head.b)
	}
	d := time.Since(start)
	if ctx.Err() != nil {
		// Cut short by the end of the window: neither an answer nor a failure of the collector.
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil:
		s.stats.Failed++
	case resp.StatusCode == http.StatusOK && empty:
		// Served before the first render of a flush: it times an empty page, not the
		// exposition (compressed, an empty page is still 20 bytes of gzip framing).
		s.stats.Empty++
	case resp.StatusCode == http.StatusOK:
		s.stats.OK++
		s.stats.WireBytes = n
		s.lat = append(s.lat, d)
		s.hdr = append(s.hdr, headers)
	case resp.StatusCode == http.StatusServiceUnavailable:
		s.stats.Unavailable++
	default:
		s.stats.OtherStatus++
	}
}

// End stops the clients and returns what they saw.
func (s *Scrapers) End() ScrapeStats {
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	slices.Sort(s.lat)
	s.stats.P50 = harness.ToMillis(harness.NearestRank(s.lat, 50))
	s.stats.P99 = harness.ToMillis(harness.NearestRank(s.lat, 99))
	slices.Sort(s.hdr)
	s.stats.HeadersP50 = harness.ToMillis(harness.NearestRank(s.hdr, 50))
	s.stats.HeadersP99 = harness.ToMillis(harness.NearestRank(s.hdr, 99))
	return s.stats
}

// headWriter discards what it is given and keeps its first headBytes bytes.
type headWriter struct{ b []byte }

// headBytes is more than a gzip member of an empty page takes (20 bytes).
const headBytes = 64

func (w *headWriter) Write(p []byte) (int, error) {
	if room := headBytes - len(w.b); room > 0 {
		w.b = append(w.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// inflatesToNothing reports whether head, the start of a gzip body, is the whole body and
// holds no byte of content.
func inflatesToNothing(head []byte) bool {
	if len(head) >= headBytes {
		return false
	}
	zr, err := gzip.NewReader(bytes.NewReader(head))
	if err != nil {
		return false
	}
	var one [1]byte
	n, _ := io.ReadFull(zr, one[:])
	return n == 0
}
