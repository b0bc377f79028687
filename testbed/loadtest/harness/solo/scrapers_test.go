package solo

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScrapersCountStatuses(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) % 3 {
		case 0:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 1:
			assert.Equal(t, "identity", r.Header.Get("Accept-Encoding"))
			_, _ = w.Write([]byte("calls_total 1\n"))
		default:
			w.WriteHeader(http.StatusOK) // empty page: before the first flush
		}
	}))
	defer srv.Close()
	sc := StartScrapers(context.Background(), srv.URL, 2, false, 0, time.Second)
	require.Eventually(t, func() bool { return n.Load() >= 30 }, 10*time.Second, time.Millisecond)
	st := sc.End()
	assert.Equal(t, 2, st.Clients)
	assert.Positive(t, st.OK)
	assert.Positive(t, st.Empty)
	assert.Positive(t, st.Unavailable)
	assert.Zero(t, st.OtherStatus)
	assert.Zero(t, st.Failed)
	assert.Equal(t, int64(len("calls_total 1\n")), st.WireBytes)
	assert.Positive(t, float64(st.P99))
	// Every answer is counted once, in one class; the requests cut by end are not counted.
	assert.LessOrEqual(t, int64(st.OK+st.Empty+st.Unavailable), n.Load())
}

// An empty page sent gzip-encoded is 20 bytes of framing: it is counted empty, as an empty
// identity page is, not as an answer whose size and latency describe the exposition.
func TestScrapersCountAnEmptyGzipPageAsEmpty(t *testing.T) {
	gzipOf := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write([]byte(s))
		require.NoError(t, zw.Close())
		return b.Bytes()
	}
	empty, page := gzipOf(""), gzipOf("calls_total 1\n")
	require.Len(t, empty, 23) // Go's writer; cachedprom's is 20: both under headBytes
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "gzip", r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Encoding", "gzip")
		if n.Add(1)%2 == 0 {
			_, _ = w.Write(empty)
			return
		}
		_, _ = w.Write(page)
	}))
	defer srv.Close()
	sc := StartScrapers(context.Background(), srv.URL, 1, true, 0, time.Second)
	require.Eventually(t, func() bool { return n.Load() >= 20 }, 10*time.Second, time.Millisecond)
	st := sc.End()
	assert.Positive(t, st.OK)
	assert.Positive(t, st.Empty)
	assert.Equal(t, int64(len(page)), st.WireBytes, "the size is that of the page with content")
}
