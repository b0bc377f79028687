package harness

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// PrometheusAccept is the Accept header Prometheus 2.x sends when scraping, so that each exporter
// negotiates the format it would serve a real Prometheus.
const PrometheusAccept = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

// CallsMetric is the spanmetrics calls counter as the Prometheus exporter names it; tracemetrics
// keeps the same name by default.
const CallsMetric = "traces_span_metrics_calls_total"

// Scrape is one timed GET of a metrics endpoint.
type Scrape struct {
	// At is when the scrape started, from the start of the load.
	At time.Duration
	// Latency runs from sending the request to the last byte of the body, which is what a
	// Prometheus server waits for before it can ingest the page.
	Latency time.Duration
	// WireBytes is the body size as transferred (gzip).
	WireBytes int64
	// Empty marks a page without a single sample line, as served before the first metrics flush.
	Empty bool `json:",omitempty"`
	// Failed marks a scrape that errored or timed out; its Latency is then the timeout.
	Failed bool `json:",omitempty"`
}

// Scraper issues Prometheus-style scrapes: gzip, the Prometheus Accept header, a timeout.
type Scraper struct {
	client *http.Client
	// identity asks for an uncompressed body: for counting after the load, where compressing and
	// inflating hundreds of MB on both ends would only slow the check down.
	identity bool
}

// NewScraper returns a scraper whose requests give up after timeout.
func NewScraper(timeout time.Duration) *Scraper {
	// DisableCompression: the request asks for gzip itself and reads the compressed body, so the
	// wire size is known.
	return &Scraper{client: &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 2},
	}}
}

// NewCountingScraper returns a scraper for SumCounter after the load: uncompressed, one timeout.
func NewCountingScraper(timeout time.Duration) *Scraper {
	s := NewScraper(timeout)
	s.identity = true
	return s
}

// Close drops idle connections.
func (s *Scraper) Close() { s.client.CloseIdleConnections() }

// Get scrapes url once. With onLine nil the body is read but not decompressed beyond its first
// bytes: a page of 100k series is hundreds of MB of text, and inflating it on this host would take
// CPU from the collectors under test. With onLine set, every exposition line is handed to it.
func (s *Scraper) Get(ctx context.Context, url string, onLine func(line []byte)) (Scrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return Scrape{}, err
	}
	req.Header.Set("Accept", PrometheusAccept)
	if s.identity {
		req.Header.Set("Accept-Encoding", "identity")
	} else {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return Scrape{}, fmt.Errorf("cannot scrape url=%q: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return Scrape{}, fmt.Errorf("cannot scrape url=%q: status %s", url, resp.Status)
	}
	wire := &CountingReader{R: resp.Body}
	var body io.Reader = wire
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(wire)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return Scrape{Latency: time.Since(start), Empty: true}, nil
			}
			return Scrape{}, fmt.Errorf("cannot read gzip body of url=%q: %w", url, err)
		}
		defer zr.Close()
		body = zr
	}
	empty := true
	if onLine == nil {
		var first [1]byte
		n, _ := io.ReadFull(body, first[:])
		empty = n == 0
		_, err = io.Copy(io.Discard, wire)
	} else {
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if len(line) > 0 && line[0] != '#' {
				empty = false
			}
			onLine(line)
		}
		err = sc.Err()
	}
	if err != nil {
		return Scrape{}, fmt.Errorf("cannot read body of url=%q: %w", url, err)
	}
	return Scrape{Latency: time.Since(start), WireBytes: wire.N, Empty: empty}, nil
}

// SumCounter scrapes url and returns the sum of every sample of metric.
func (s *Scraper) SumCounter(ctx context.Context, url, metric string) (float64, error) {
	sums, err := s.SumCounters(ctx, url, metric)
	if sums == nil {
		return 0, err
	}
	return sums[0], err
}

// SumCounters is SumCounter for several counters in one scrape: their sums in the order given.
func (s *Scraper) SumCounters(ctx context.Context, url string, metrics ...string) ([]float64, error) {
	sums := make([]float64, len(metrics))
	prefixes := make([][]byte, len(metrics))
	for i, m := range metrics {
		prefixes[i] = []byte(m)
	}
	var badErr error
	_, err := s.Get(ctx, url, func(line []byte) {
		for i, prefix := range prefixes {
			// Most lines belong to other metrics; only matching ones become strings.
			if !bytes.HasPrefix(line, prefix) {
				continue
			}
			v, ok, err := sampleValue(string(line), metrics[i])
			if err != nil && badErr == nil {
				badErr = err
			}
			if ok {
				sums[i] += v
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return sums, badErr
}

// sampleValue parses line as a sample of metric (text 0.0.4 or OpenMetrics): the value after the
// label set, skipping a timestamp or an exemplar that may follow.
func sampleValue(line, metric string) (float64, bool, error) {
	rest, ok := strings.CutPrefix(line, metric)
	if !ok || rest == "" {
		return 0, false, nil
	}
	switch rest[0] {
	case '{':
		end := labelSetEnd(rest)
		if end < 0 {
			return 0, false, fmt.Errorf("cannot parse labels of line %q", line)
		}
		rest = rest[end+1:]
	case ' ':
	default:
		// A longer metric name that merely starts with metric.
		return 0, false, nil
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return 0, false, fmt.Errorf("missing value in line %q", line)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return 0, false, fmt.Errorf("cannot parse value of line %q: %w", line, err)
	}
	return v, true, nil
}

// labelSetEnd returns the index of the '}' closing the label set that s starts with, honouring
// quoted label values (which may hold '}' and escaped quotes).
func labelSetEnd(s string) int {
	inQuotes := false
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case inQuotes && c == '\\':
			i++
		case c == '"':
			inQuotes = !inQuotes
		case !inQuotes && c == '}':
			return i
		}
	}
	return -1
}

// CountingReader counts the bytes read through it: N of R.
type CountingReader struct {
	R io.Reader
	N int64
}

func (c *CountingReader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += int64(n)
	return n, err
}

// errNotReady is returned by WaitReady when the deadline passes.
var errNotReady = errors.New("not ready")

// WaitReady polls url until it answers 200 or timeout passes.
func (s *Scraper) WaitReady(ctx context.Context, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
		if err != nil {
			return err
		}
		resp, err := s.client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("url=%q: %w after %s", url, errNotReady, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
