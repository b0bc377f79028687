package cachedprom

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"
)

// Accept headers of the scrapers that ask for the protobuf exposition.
const (
	// Prometheus 2.42 to 2.54 with --enable-feature=native-histograms.
	acceptProm242Native = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
	// Prometheus 3.x with scrape_native_histograms (DefaultProtoFirstScrapeProtocols).
	acceptProm3Native = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.6,application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1"
	// Prometheus 3.x without native histograms (DefaultScrapeProtocols).
	acceptProm3 = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1"

	wantContentTypeProto = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited; escaping=underscores"
)

func TestProtoServedWhenAskedFor(t *testing.T) {
	for _, om := range []bool{false, true} {
		t.Run("open_metrics="+strconv.FormatBool(om), func(t *testing.T) {
			e, url := startOurs(t, func(c *Config) { c.EnableOpenMetrics = om })
			require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.MixedMetrics(0, promtest.TestBase)))
			// Uncompressed bodies are kept: inflating one for each client
			// is one client at a time (TestProtoIdentityKept covers it).
			now := time.Now().UnixNano()
			e.textIdentitySeen.Store(now)
			e.omIdentitySeen.Store(now)
			e.protoIdentitySeen.Store(now)
			e.renderNow()
			text, textResp := promtest.Scrape(t, url, "", true)
			textETag := textResp.Header.Get("ETag")
			require.Nil(t, e.snapshot.Load().Body(render.BodyProto).Gzip, "no protobuf body before a client asks")

			// The first protobuf client gets text (it says so) and asks
			// for a render with the protobuf body.
			first, resp := promtest.Scrape(t, url, acceptProm3Native, true)
			assert.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
			assert.Equal(t, text, first)
			e.renderNow()
			snap := hold(t, e)
			require.NotNil(t, snap.Body(render.BodyProto).Gzip)

			// Text is unchanged by the protobuf body beside it.
			again, againResp := promtest.Scrape(t, url, "", true)
			assert.Equal(t, text, again)
			assert.Equal(t, textETag, againResp.Header.Get("ETag"))

			want := flattenProto(t, promtest.DecodeProto(t, protoBody(t, snap)))
			assertSameMaps(t, promtest.ParseText(t, text), want, "protobuf body vs text")

			etags := map[string]string{textETag: "text gzip"}
			for _, accept := range []string{acceptProm242Native, acceptProm3Native} {
				for _, gz := range []bool{true, false} {
					name := accept[len(accept)-10:] + " gzip=" + strconv.FormatBool(gz)
					body, resp := promtest.Scrape(t, url, accept, gz)
					assert.Equal(t, wantContentTypeProto, resp.Header.Get("Content-Type"), name)
					assert.Equal(t, "Accept, Accept-Encoding", resp.Header.Get("Vary"), name)
					if gz {
						assert.Equal(t, "gzip", resp.Header.Get("Content-Encoding"), name)
					} else {
						assert.Empty(t, resp.Header.Get("Content-Encoding"), name)
					}
					assertSameMaps(t, want, flattenProto(t, promtest.DecodeProto(t, body)), name)
					etag := resp.Header.Get("ETag")
					if other, ok := etags[etag]; ok && accept == acceptProm242Native {
						t.Errorf("%s: ETag %s also served for %s", name, etag, other)
					}
					etags[etag] = name

					// A conditional request with the protobuf ETag: 304;
					// with the text one: the body.
					r := do(t, http.MethodGet, url, map[string]string{"Accept": accept, "Accept-Encoding": acceptEncoding(gz), "If-None-Match": etag})
					assert.Equal(t, http.StatusNotModified, r.StatusCode, name)
					r = do(t, http.MethodGet, url, map[string]string{"Accept": accept, "Accept-Encoding": acceptEncoding(gz), "If-None-Match": textETag})
					assert.Equal(t, http.StatusOK, r.StatusCode, name)

					// HEAD: the GET's headers, no body.
					hr := head(t, url, accept, gz)
					assert.Equal(t, http.StatusOK, hr.StatusCode, name)
					assert.Equal(t, wantContentTypeProto, hr.Header.Get("Content-Type"), name)
					assert.Equal(t, etag, hr.Header.Get("ETag"), name)
					wantLen := len(snap.Body(render.BodyProto).Gzip)
					if !gz {
						wantLen = snap.Body(render.BodyProto).Len
					}
					assert.Equal(t, strconv.Itoa(wantLen), hr.Header.Get("Content-Length"), name)
				}
			}
			assert.Len(t, etags, 3, "text gzip, protobuf gzip, protobuf identity")

			// Clients that do not ask for protobuf never get it.
			for _, accept := range []string{"", "*/*", acceptProm3, "text/plain;version=0.0.4", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text"} {
				for _, gz := range []bool{true, false} {
					_, resp := promtest.Scrape(t, url, accept, gz)
					ct := resp.Header.Get("Content-Type")
					assert.NotContains(t, ct, "protobuf", accept)
					if om && accept == acceptProm3 {
						assert.Contains(t, ct, "openmetrics", accept)
					} else {
						assert.Contains(t, ct, "text/plain", accept)
					}
				}
			}

			// New data: a new protobuf ETag.
			require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.MixedMetrics(1, promtest.TestBase)))
			e.renderNow()
			_, resp = promtest.Scrape(t, url, acceptProm3Native, true)
			assert.NotContains(t, etags, resp.Header.Get("ETag"))
		})
	}
}

// TestProtoRenderedOnlyWhileAskedFor: without a protobuf client for
// protoTTL, renders leave the protobuf body out again.
func TestProtoRenderedOnlyWhileAskedFor(t *testing.T) {
	e, url := startOurs(t, nil)
	require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.MixedMetrics(0, promtest.TestBase)))
	e.renderNow()
	promtest.Scrape(t, url, acceptProm242Native, true)
	e.renderNow()
	require.NotNil(t, e.snapshot.Load().Body(render.BodyProto).Gzip)

	e.protoSeen.Store(time.Now().Add(-protoTTL - time.Second).UnixNano())
	e.renderNow()
	snap := hold(t, e)
	assert.Nil(t, snap.Body(render.BodyProto).Gzip)
	assert.Nil(t, snap.Body(render.BodyProto).Plain)
	_, resp := promtest.Scrape(t, url, acceptProm242Native, true)
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/plain", "text until the next render")
	e.renderNow()
	_, resp = promtest.Scrape(t, url, acceptProm242Native, true)
	assert.Equal(t, wantContentTypeProto, resp.Header.Get("Content-Type"))
}

// TestProtoIdentityKept: an uncompressed protobuf client makes the next
// render keep the protobuf body, as for text.
func TestProtoIdentityKept(t *testing.T) {
	e, url := startOurs(t, nil)
	require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.MixedMetrics(0, promtest.TestBase)))
	e.renderNow()
	promtest.Scrape(t, url, acceptProm3Native, true)
	e.renderNow()
	require.False(t, e.snapshot.Load().Body(render.BodyProto).Kept)
	// Not kept yet: inflated from the gzip form for this client.
	body, resp := promtest.Scrape(t, url, acceptProm3Native, false)
	assert.Equal(t, wantContentTypeProto, resp.Header.Get("Content-Type"))
	assert.Equal(t, promtest.Gunzip(t, hold(t, e).Body(render.BodyProto).Gzip), body)
	e.renderNow()
	snap := hold(t, e)
	require.True(t, snap.Body(render.BodyProto).Kept)
	assert.Equal(t, promtest.Gunzip(t, snap.Body(render.BodyProto).Gzip), snap.Body(render.BodyProto).Plain)
	body, resp = promtest.Scrape(t, url, acceptProm3Native, false)
	assert.Equal(t, wantContentTypeProto, resp.Header.Get("Content-Type"))
	assert.Equal(t, snap.Body(render.BodyProto).Plain, body)
}

func acceptEncoding(gz bool) string {
	if gz {
		return "gzip"
	}
	return "identity"
}

func head(t *testing.T, url, accept string, gz bool) *http.Response {
	t.Helper()
	return do(t, http.MethodHead, url, map[string]string{"Accept": accept, "Accept-Encoding": acceptEncoding(gz)})
}

// protoBody returns the snapshot's uncompressed protobuf body.
func protoBody(tb testing.TB, s *render.Snapshot) []byte {
	tb.Helper()
	pb := s.Body(render.BodyProto)
	if pb.Kept {
		return pb.Plain
	}
	return promtest.Gunzip(tb, pb.Gzip)
}
