package harness

import (
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSampleValue(t *testing.T) {
	for _, tc := range []struct {
		line string
		want float64
		ok   bool
		err  bool
	}{
		{line: `traces_span_metrics_calls_total{service_name="a",span_name="op"} 42`, want: 42, ok: true},
		{line: `traces_span_metrics_calls_total{span_name="has } brace and \" quote"} 7 1700000000000`, want: 7, ok: true},
		{line: `traces_span_metrics_calls_total 3`, want: 3, ok: true},
		{line: `traces_span_metrics_calls_total{a="b"} 1.5e+06 # {trace_id="x"} 1`, want: 1.5e6, ok: true},
		{line: `traces_span_metrics_calls_total_created{a="b"} 1`},
		{line: `# TYPE traces_span_metrics_calls_total counter`},
		{line: `traces_span_metrics_duration_bucket{le="1"} 3`},
		{line: `traces_span_metrics_calls_total{a="b"} oops`, err: true},
		{line: `traces_span_metrics_calls_total{a="b`, err: true},
	} {
		v, ok, err := sampleValue(tc.line, CallsMetric)
		if tc.err {
			assert.Error(t, err, tc.line)
			continue
		}
		require.NoError(t, err, tc.line)
		assert.Equal(t, tc.ok, ok, tc.line)
		assert.Equal(t, tc.want, v, tc.line)
	}
}

const exposition = `# HELP traces_span_metrics_calls_total calls
# TYPE traces_span_metrics_calls_total counter
traces_span_metrics_calls_total{service_name="a",status_code="STATUS_CODE_OK"} 10
traces_span_metrics_calls_total{service_name="a",status_code="STATUS_CODE_ERROR"} 5
traces_span_metrics_duration_milliseconds_count{service_name="a"} 15
`

func gzipServer(t *testing.T, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Contains(t, r.Header.Get("Accept"), "text/plain;version=0.0.4")
		if r.Header.Get("Accept-Encoding") != "gzip" {
			_, _ = w.Write([]byte(body))
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		_, _ = zw.Write([]byte(body))
		_ = zw.Close()
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestScraperReadsGzipAndSumsCounter(t *testing.T) {
	srv := gzipServer(t, exposition)
	s := NewScraper(5 * time.Second)
	defer s.Close()

	sc, err := s.Get(context.Background(), srv.URL, nil)
	require.NoError(t, err)
	assert.False(t, sc.Empty)
	assert.Positive(t, sc.WireBytes)
	assert.Positive(t, sc.Latency)

	sum, err := s.SumCounter(context.Background(), srv.URL, CallsMetric)
	require.NoError(t, err)
	assert.Equal(t, 15.0, sum)
}

func TestScraperMarksEmptyPages(t *testing.T) {
	s := NewScraper(5 * time.Second)
	defer s.Close()
	for _, body := range []string{"", "# HELP only comments\n"} {
		srv := gzipServer(t, body)
		sc, err := s.Get(context.Background(), srv.URL, nil)
		require.NoError(t, err)
		if body == "" {
			assert.True(t, sc.Empty)
		}
		sum, err := s.SumCounter(context.Background(), srv.URL, CallsMetric)
		require.NoError(t, err)
		assert.Zero(t, sum)
	}
}

func TestScraperReportsHTTPErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	s := NewScraper(time.Second)
	defer s.Close()
	_, err := s.Get(context.Background(), srv.URL, nil)
	require.ErrorContains(t, err, "503")
	err = s.WaitReady(context.Background(), srv.URL, 300*time.Millisecond)
	require.ErrorIs(t, err, errNotReady)
}
