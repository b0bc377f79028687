package cachedprom

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/open-telemetry/opentelemetry-collector-contrib/connector/spanmetricsconnector"
	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/metadata"
	"github.com/otelcol-red/otelcol-red/internal/freeport"
)

// freeEndpoint returns a loopback address nobody listens on right now.
func freeEndpoint(tb testing.TB) string {
	tb.Helper()
	addr, err := freeport.Addr()
	require.NoError(tb, err)
	return addr
}

// startOurs starts a cachedprom exporter on a free port and returns it with
// its scrape URL. mutate adjusts the default configuration.
func startOurs(tb testing.TB, mutate func(*Config)) (*cachedExporter, string) {
	tb.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.NetAddr.Endpoint = freeEndpoint(tb)
	cfg.RenderInterval = 10 * time.Millisecond
	// The tests scrape back to back; pacing has tests of its own.
	cfg.MinScrapeInterval = 0
	if mutate != nil {
		mutate(cfg)
	}
	require.NoError(tb, confmap.Validate(cfg))
	e, err := newExporter(cfg, exportertest.NewNopSettings(metadata.Type), clockwork.NewRealClock())
	require.NoError(tb, err)
	require.NoError(tb, e.Start(context.Background(), componenttest.NewNopHost()))
	tb.Cleanup(func() { require.NoError(tb, e.Shutdown(context.Background())) })
	return e, "http://" + cfg.NetAddr.Endpoint + cfg.Path
}

// startStock starts the contrib prometheus exporter with the same settings.
func startStock(tb testing.TB, mutate func(*prometheusexporter.Config)) (exporter.Metrics, string) {
	tb.Helper()
	f := prometheusexporter.NewFactory()
	cfg := f.CreateDefaultConfig().(*prometheusexporter.Config)
	cfg.ServerConfig.NetAddr.Endpoint = freeEndpoint(tb)
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

// scrape GETs url with the given Accept header and optional gzip, and returns
// the decoded body and the response.
func scrape(tb testing.TB, url, accept string, gz bool) ([]byte, *http.Response) {
	tb.Helper()
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	body, resp, err := fetch(&http.Client{Transport: tr, Timeout: 60 * time.Second}, url, accept, gz)
	require.NoError(tb, err)
	return body, resp
}

// fetch is scrape returning its error instead of failing the test, for
// goroutines other than the test's: one GET, a 200 answer required, the
// body inflated when it came gzip-encoded.
func fetch(c *http.Client, url, accept string, gz bool) ([]byte, *http.Response, error) {
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

// parseText parses a text 0.0.4 exposition into a comparable form.
func parseText(tb testing.TB, body []byte) map[string]string {
	tb.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	require.NoError(tb, err, "exposition does not parse:\n%s", body)
	return flattenFamilies(fams)
}

// flattenFamilies turns parsed families into "family|type|help" and
// "family{sorted labels}|kind" keys with their values, so two expositions can
// be compared regardless of order.
func flattenFamilies(fams map[string]*dto.MetricFamily) map[string]string {
	out := map[string]string{}
	for name, mf := range fams {
		out[name+"|type"] = mf.GetType().String()
		out[name+"|help"] = mf.GetHelp()
		for _, m := range mf.Metric {
			var lbls []string
			for _, l := range m.Label {
				lbls = append(lbls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(lbls)
			key := name + "{" + strings.Join(lbls, ",") + "}"
			switch {
			case m.Counter != nil:
				out[key] = fmtVal(m.Counter.GetValue())
			case m.Gauge != nil:
				out[key] = fmtVal(m.Gauge.GetValue())
			case m.Untyped != nil:
				out[key] = fmtVal(m.Untyped.GetValue())
			case m.Summary != nil:
				out[key+"_sum"] = fmtVal(m.Summary.GetSampleSum())
				out[key+"_count"] = fmt.Sprint(m.Summary.GetSampleCount())
				for _, q := range m.Summary.Quantile {
					out[key+"q"+fmtVal(q.GetQuantile())] = fmtVal(q.GetValue())
				}
			case m.Histogram != nil:
				out[key+"_sum"] = fmtVal(m.Histogram.GetSampleSum())
				out[key+"_count"] = fmt.Sprint(m.Histogram.GetSampleCount())
				for _, b := range m.Histogram.Bucket {
					out[key+"le"+fmtVal(b.GetUpperBound())] = fmt.Sprint(b.GetCumulativeCount())
				}
			}
			if m.TimestampMs != nil {
				out[key+"|ts"] = fmt.Sprint(m.GetTimestampMs())
			}
		}
	}
	return out
}

func fmtVal(f float64) string {
	if math.IsNaN(f) {
		return "NaN"
	}
	return fmt.Sprint(f)
}

// sortedLines returns the lines of an exposition sorted, for comparisons
// that ignore order but not formatting.
func sortedLines(body []byte) []string {
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	sort.Strings(lines)
	return lines
}

// spanmetricsOutput runs the contrib spanmetrics connector over each traces
// batch in turn and returns, per batch, the first flush that carries data.
func spanmetricsOutput(tb testing.TB, temporality string, batches ...ptrace.Traces) []pmetric.Metrics {
	return connectorOutput(tb, spanmetricsconnector.NewFactory(), temporality, batches...)
}

// tracemetricsOutput does the same with our tracemetrics connector.
func tracemetricsOutput(tb testing.TB, temporality string, batches ...ptrace.Traces) []pmetric.Metrics {
	return connectorOutput(tb, tracemetrics.NewFactory(), temporality, batches...)
}

func connectorOutput(tb testing.TB, f connector.Factory, temporality string, batches ...ptrace.Traces) []pmetric.Metrics {
	tb.Helper()
	cfg := f.CreateDefaultConfig()
	// Both connectors take these keys; setting them through confmap keeps
	// this helper independent of their Go types.
	require.NoError(tb, confmap.NewFromStringMap(map[string]any{
		"metrics_flush_interval":  "20ms",
		"aggregation_temporality": temporality,
	}).Unmarshal(cfg))
	sink := &consumertest.MetricsSink{}
	conn, err := f.CreateTracesToMetrics(context.Background(), connectortest.NewNopSettings(f.Type()), cfg, sink)
	require.NoError(tb, err)
	require.NoError(tb, conn.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(tb, conn.Shutdown(context.Background())) }()
	var out []pmetric.Metrics
	for _, td := range batches {
		seen := len(sink.AllMetrics())
		c := ptrace.NewTraces()
		td.CopyTo(c)
		require.NoError(tb, conn.ConsumeTraces(context.Background(), c))
		var got pmetric.Metrics
		require.Eventually(tb, func() bool {
			all := sink.AllMetrics()
			for _, md := range all[min(seen, len(all)):] {
				if md.DataPointCount() > 0 {
					got = md
					return true
				}
			}
			return false
		}, 10*time.Second, 5*time.Millisecond)
		out = append(out, got)
	}
	return out
}

// testTraces builds spans for nSeries distinct (service, span name) series,
// with errors and varied durations.
func testTraces(services, spansPerService int, base time.Time) ptrace.Traces {
	td := ptrace.NewTraces()
	for s := 0; s < services; s++ {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", fmt.Sprintf("svc-%d", s))
		rs.Resource().Attributes().PutStr("service.instance.id", fmt.Sprintf("inst-%d", s))
		rs.Resource().Attributes().PutStr("host.name", "host \"a\"\\b")
		ss := rs.ScopeSpans().AppendEmpty()
		for i := 0; i < spansPerService; i++ {
			sp := ss.Spans().AppendEmpty()
			sp.SetName(fmt.Sprintf("GET /item/%d", i))
			sp.SetKind(ptrace.SpanKindServer)
			sp.SetTraceID(pcommon.TraceID([16]byte{byte(s), byte(i), 1}))
			sp.SetSpanID(pcommon.SpanID([8]byte{byte(s), byte(i), 2}))
			sp.SetStartTimestamp(pcommon.NewTimestampFromTime(base))
			sp.SetEndTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(1+i%7) * 3 * time.Millisecond)))
			if i%5 == 0 {
				sp.Status().SetCode(ptrace.StatusCodeError)
			}
		}
	}
	return td
}

// assertSameMaps reports only the keys whose values differ, so a failure
// stays readable on large expositions.
func assertSameMaps(t *testing.T, want, got map[string]string, what string) {
	t.Helper()
	var diffs []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("missing %s = %s", k, w))
		} else if g != w {
			diffs = append(diffs, fmt.Sprintf("differs %s: want %s, got %s", k, w, g))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("extra %s = %s", k, g))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("%s: %d differences:\n%s", what, len(diffs), strings.Join(diffs, "\n"))
	}
}

// assertSameLines compares two line multisets and reports the differences.
func assertSameLines(t *testing.T, want, got []byte, what string) {
	t.Helper()
	count := map[string]int{}
	for _, l := range sortedLines(want) {
		count[l]++
	}
	for _, l := range sortedLines(got) {
		count[l]--
	}
	var diffs []string
	for l, n := range count {
		switch {
		case n > 0:
			diffs = append(diffs, "only in want: "+l)
		case n < 0:
			diffs = append(diffs, "only in got:  "+l)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("%s: %d differing lines:\n%s", what, len(diffs), strings.Join(diffs, "\n"))
	}
}

// hold returns the published snapshot registered as a reader until the test
// ends, as a scrape holds it: a render (the render loop's included) may
// retire it meanwhile, and a retired snapshot nobody reads gives its pages
// back.
func hold(tb testing.TB, e *cachedExporter) *snapshot {
	tb.Helper()
	s := e.acquire()
	require.NotNil(tb, s, "no snapshot published")
	tb.Cleanup(func() { s.readers.Add(-1) })
	return s
}

// onFakeClock returns an exporter of cfg whose ingest, render loop and
// pacer read a fake clock at testBase, shut down when the test ends.
func onFakeClock(tb testing.TB, cfg *Config) (*cachedExporter, *clockwork.FakeClock) {
	tb.Helper()
	clock := clockwork.NewFakeClockAt(testBase)
	e, err := newExporter(cfg, exportertest.NewNopSettings(metadata.Type), clock)
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, e.Shutdown(context.Background())) })
	return e, clock
}

// textOf returns a snapshot's text body, decompressing it when only the
// gzip form was kept.
func textOf(tb testing.TB, s *snapshot) string {
	tb.Helper()
	if s.textKept {
		return string(s.text)
	}
	b := gunzip(tb, s.textGzip)
	require.Len(tb, b, s.textLen)
	return string(b)
}

func gunzip(tb testing.TB, gz []byte) []byte {
	tb.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	require.NoError(tb, err)
	b, err := io.ReadAll(zr)
	require.NoError(tb, err)
	return b
}

// offHeapBytes is the memory the store holds outside the Go heap.
func (s *seriesStore) offHeapBytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.chunks {
		n += len(c.mem)
	}
	for _, c := range s.buckets.chunks {
		n += len(c.mem)
	}
	n += s.labels.pairs.mappedBytes() + s.labels.sets.mappedBytes()
	return n
}

// len returns the number of series (rows).
func (s *seriesStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live
}

// clients returns the number of addresses the pacer remembers.
func (p *pacer) clients() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.next)
}
