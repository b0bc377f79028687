package promtest // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/otelcol-red/otelcol-red/internal/freeport"
)

// FreeEndpoint returns a loopback address nobody listens on right now.
func FreeEndpoint(tb testing.TB) string {
	tb.Helper()
	addr, err := freeport.Addr()
	require.NoError(tb, err)
	return addr
}

// StartStock starts the contrib prometheus exporter on a free port, shut
// down when the test ends, and returns it with its scrape URL. mutate
// adjusts its default configuration.
func StartStock(tb testing.TB, mutate func(*prometheusexporter.Config)) (exporter.Metrics, string) {
	tb.Helper()
	f := prometheusexporter.NewFactory()
	cfg := f.CreateDefaultConfig().(*prometheusexporter.Config)
	cfg.ServerConfig.NetAddr.Endpoint = FreeEndpoint(tb)
	if mutate != nil {
		mutate(cfg)
	}
	require.NoError(tb, confmap.Validate(cfg))
	exp, err := f.CreateMetrics(context.Background(), exportertest.NewNopSettings(f.Type()), cfg)
	require.NoError(tb, err)
	require.NoError(tb, exp.Start(context.Background(), componenttest.NewNopHost()))
	tb.Cleanup(func() { require.NoError(tb, exp.Shutdown(context.Background())) })
	return exp, "http://" + cfg.ServerConfig.NetAddr.Endpoint + "/metrics"
}

// Scrape GETs url with the given Accept header and optional gzip, and returns
// the decoded body and the response.
func Scrape(tb testing.TB, url, accept string, gz bool) ([]byte, *http.Response) {
	tb.Helper()
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	body, resp, err := Fetch(&http.Client{Transport: tr, Timeout: 60 * time.Second}, url, accept, gz)
	require.NoError(tb, err)
	return body, resp
}

// Fetch is Scrape returning its error instead of failing the test, for
// goroutines other than the test's: one GET, a 200 answer required, the
// body inflated when it came gzip-encoded.
func Fetch(c *http.Client, url, accept string, gz bool) ([]byte, *http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, url, http.NoBody)
	if err != nil {
		return nil, nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, resp, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp, fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, resp, err
		}
		if body, err = io.ReadAll(zr); err != nil {
			return nil, resp, err
		}
	}
	return body, resp, nil
}
