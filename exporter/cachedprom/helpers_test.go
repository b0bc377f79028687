package cachedprom

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/open-telemetry/opentelemetry-collector-contrib/connector/spanmetricsconnector"
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
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"
)

// startOurs starts a cachedprom exporter on a free port and returns it with
// its scrape URL. mutate adjusts the default configuration.
func startOurs(tb testing.TB, mutate func(*Config)) (*cachedExporter, string) {
	tb.Helper()
	return startOursWith(tb, exportertest.NewNopSettings(metadata.Type), mutate)
}

// startOursWith is startOurs with the exporter's settings.
func startOursWith(tb testing.TB, set exporter.Settings, mutate func(*Config)) (*cachedExporter, string) {
	tb.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.NetAddr.Endpoint = promtest.FreeEndpoint(tb)
	cfg.RenderInterval = 10 * time.Millisecond
	// The tests scrape back to back; pacing has tests of its own.
	cfg.MinScrapeInterval = 0
	if mutate != nil {
		mutate(cfg)
	}
	require.NoError(tb, confmap.Validate(cfg))
	e, err := newExporter(cfg, set, clockwork.NewRealClock())
	require.NoError(tb, err)
	require.NoError(tb, e.Start(context.Background(), componenttest.NewNopHost()))
	tb.Cleanup(func() { require.NoError(tb, e.Shutdown(context.Background())) })
	return e, "http://" + cfg.NetAddr.Endpoint + cfg.Path
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
func hold(tb testing.TB, e *cachedExporter) *render.Snapshot {
	tb.Helper()
	s := e.acquire()
	require.NotNil(tb, s, "no snapshot published")
	tb.Cleanup(s.Release)
	return s
}

// onFakeClock returns an exporter of cfg whose ingest, render loop and
// pacer read a fake clock at promtest.TestBase, shut down when the test ends.
func onFakeClock(tb testing.TB, cfg *Config) (*cachedExporter, *clockwork.FakeClock) {
	tb.Helper()
	clock := clockwork.NewFakeClockAt(promtest.TestBase)
	e, err := newExporter(cfg, exportertest.NewNopSettings(metadata.Type), clock)
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, e.Shutdown(context.Background())) })
	return e, clock
}

// textOf returns a snapshot's text body, decompressing it when only the
// gzip form was kept.
func textOf(tb testing.TB, s *render.Snapshot) string {
	tb.Helper()
	text := s.Body(render.BodyText)
	if text.Kept {
		return string(text.Plain)
	}
	b := promtest.Gunzip(tb, text.Gzip)
	require.Len(tb, b, text.Len)
	return string(b)
}
