package cachedprom

import (
	"context"
	"encoding/hex"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracegraph"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
)

// TestTracegraphExemplarsServed: the service graph's latency histograms, with
// tracegraph's exemplars on, reach both expositions that carry exemplars
// (OpenMetrics and protobuf, enable_open_metrics on) with the IDs of the
// spans tracegraph chose: with two exemplars per point, the two slowest of
// three calls that succeeded, and the failed call (its own series, failed is
// a label), server spans on the server histogram and client spans on the
// client one; and, with exponential histograms, on the native histograms of
// the protobuf body.
func TestTracegraphExemplarsServed(t *testing.T) {
	td := ptrace.NewTraces()
	clients := td.ResourceSpans().AppendEmpty()
	clients.Resource().Attributes().PutStr("service.name", "front")
	servers := td.ResourceSpans().AppendEmpty()
	servers.Resource().Attributes().PutStr("service.name", "back")
	start := time.Unix(1_700_000_000, 0)
	type call struct {
		d      time.Duration
		failed bool
	}
	calls := []call{{10 * time.Millisecond, false}, {2 * time.Second, false}, {500 * time.Millisecond, false}, {50 * time.Millisecond, true}}
	var traceIDs []pcommon.TraceID
	for i, c := range calls {
		tid := pcommon.TraceID{0xa, byte(i + 1)}
		traceIDs = append(traceIDs, tid)
		span := func(ss ptrace.SpanSlice, kind ptrace.SpanKind, id, parent pcommon.SpanID) {
			s := ss.AppendEmpty()
			s.SetKind(kind)
			s.SetTraceID(tid)
			s.SetSpanID(id)
			s.SetParentSpanID(parent)
			s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(c.d)))
			if c.failed {
				s.Status().SetCode(ptrace.StatusCodeError)
			}
		}
		span(clients.ScopeSpans().AppendEmpty().Spans(), ptrace.SpanKindClient, clientSpan(i), pcommon.SpanID{})
		span(servers.ScopeSpans().AppendEmpty().Spans(), ptrace.SpanKindServer, serverSpan(i), clientSpan(i))
	}

	out := tracegraphOutput(t, td, map[string]any{
		"exemplars": map[string]any{"enabled": true, "max_per_data_point": 2},
	})
	e, url := startOurs(t, func(c *Config) { c.EnableOpenMetrics = true })
	for _, md := range out {
		require.NoError(t, e.ConsumeMetrics(context.Background(), md))
	}
	hexOf := func(b []byte) string { return hex.EncodeToString(b) }
	ids := func(idx []int, span func(int) pcommon.SpanID) []string {
		var out []string
		for _, i := range idx {
			s := span(i)
			out = append(out, hexOf(traceIDs[i][:])+"/"+hexOf(s[:]))
		}
		sort.Strings(out)
		return out
	}
	// The two slowest that succeeded (1, 2), not the fastest (0); the failed one (3).
	want := map[string][]string{
		"traces_service_graph_request_server_seconds": ids([]int{1, 2, 3}, serverSpan),
		"traces_service_graph_request_client_seconds": ids([]int{1, 2, 3}, clientSpan),
	}

	t.Run("openmetrics", func(t *testing.T) {
		e.renderNow()
		body, resp := promtest.Scrape(t, url, acceptProm3, false)
		require.Contains(t, resp.Header.Get("Content-Type"), "application/openmetrics-text")
		line := regexp.MustCompile(`(?m)^(traces_service_graph_request_\w+_seconds)_bucket\{[^}]*\} \d+ # \{([^}]*)\} \S+ \S+$`)
		label := regexp.MustCompile(`(\w+)="([0-9a-f]+)"`)
		got := map[string][]string{}
		for _, m := range line.FindAllStringSubmatch(string(body), -1) {
			l := map[string]string{}
			for _, kv := range label.FindAllStringSubmatch(m[2], -1) {
				l[kv[1]] = kv[2]
			}
			got[m[1]] = append(got[m[1]], l["trace_id"]+"/"+l["span_id"])
		}
		for name := range got {
			sort.Strings(got[name])
		}
		assert.Equal(t, want, got, "exemplars of the OpenMetrics body:\n%s", body)
	})

	t.Run("protobuf", func(t *testing.T) {
		e.renderNow()
		promtest.Scrape(t, url, acceptProm3Native, true)
		e.renderNow()
		body, resp := promtest.Scrape(t, url, acceptProm3Native, true)
		require.Equal(t, wantContentTypeProto, resp.Header.Get("Content-Type"))
		got := map[string][]string{}
		for _, mf := range promtest.DecodeProto(t, body) {
			if _, ok := want[mf.GetName()]; !ok {
				continue
			}
			require.Len(t, mf.Metric, 2, "failed and not")
			for _, m := range mf.Metric {
				for _, b := range m.GetHistogram().GetBucket() {
					if x := b.GetExemplar(); x != nil {
						l := map[string]string{}
						for _, lp := range x.GetLabel() {
							l[lp.GetName()] = lp.GetValue()
						}
						got[mf.GetName()] = append(got[mf.GetName()], l["trace_id"]+"/"+l["span_id"])
					}
				}
			}
			sort.Strings(got[mf.GetName()])
		}
		assert.Equal(t, want, got)
	})

	t.Run("native histograms", func(t *testing.T) {
		out := tracegraphOutput(t, td, map[string]any{
			"exponential_histogram_max_size": 20,
			"exemplars":                      map[string]any{"enabled": true, "max_per_data_point": 2},
		})
		e, url := startOurs(t, nil)
		for _, md := range out {
			require.NoError(t, e.ConsumeMetrics(context.Background(), md))
		}
		e.renderNow()
		promtest.Scrape(t, url, acceptProm3Native, true)
		e.renderNow()
		body, _ := promtest.Scrape(t, url, acceptProm3Native, true)
		got := map[string][]string{}
		for _, mf := range promtest.DecodeProto(t, body) {
			if _, ok := want[mf.GetName()]; !ok {
				continue
			}
			for _, m := range mf.Metric {
				require.NotNil(t, m.GetHistogram().Schema, "a native histogram")
				for _, x := range m.GetHistogram().GetExemplars() {
					l := map[string]string{}
					for _, lp := range x.GetLabel() {
						l[lp.GetName()] = lp.GetValue()
					}
					got[mf.GetName()] = append(got[mf.GetName()], l["trace_id"]+"/"+l["span_id"])
				}
			}
			sort.Strings(got[mf.GetName()])
		}
		assert.Equal(t, want, got)
	})
}

// tracegraphOutput runs a tracegraph connector configured by conf over td and returns what it
// sent, its final flush (at shutdown) included.
func tracegraphOutput(t *testing.T, td ptrace.Traces, conf map[string]any) []pmetric.Metrics {
	t.Helper()
	f := tracegraph.NewFactory()
	cfg := f.CreateDefaultConfig()
	require.NoError(t, confmap.NewFromStringMap(conf).Unmarshal(cfg))
	sink := &consumertest.MetricsSink{}
	conn, err := f.CreateTracesToMetrics(context.Background(), connectortest.NewNopSettings(f.Type()), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, conn.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, conn.ConsumeTraces(context.Background(), td))
	require.NoError(t, conn.Shutdown(context.Background()))
	require.NotEmpty(t, sink.AllMetrics())
	return sink.AllMetrics()
}

func clientSpan(i int) pcommon.SpanID { return pcommon.SpanID{0xc, byte(i + 1)} }
func serverSpan(i int) pcommon.SpanID { return pcommon.SpanID{0x5, byte(i + 1)} }

// TestTracegraphMessagingHistogramName: tracegraph's messaging latency histogram is served under
// Tempo's name, traces_service_graph_request_messaging_system_seconds (the name dashboards built
// for Tempo's metrics-generator query), with the consumer span as its exemplar.
func TestTracegraphMessagingHistogramName(t *testing.T) {
	td := ptrace.NewTraces()
	start := time.Unix(1_700_000_000, 0)
	producer := td.ResourceSpans().AppendEmpty()
	producer.Resource().Attributes().PutStr("service.name", "orders")
	p := producer.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	p.SetKind(ptrace.SpanKindProducer)
	p.SetTraceID(pcommon.TraceID{0xa})
	p.SetSpanID(pcommon.SpanID{0xa})
	p.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	p.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(10 * time.Millisecond)))
	consumer := td.ResourceSpans().AppendEmpty()
	consumer.Resource().Attributes().PutStr("service.name", "billing")
	c := consumer.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	c.SetKind(ptrace.SpanKindConsumer)
	c.SetTraceID(pcommon.TraceID{0xb})
	c.SetSpanID(pcommon.SpanID{0xb})
	c.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(260 * time.Millisecond)))
	c.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(300 * time.Millisecond)))
	l := c.Links().AppendEmpty()
	l.SetTraceID(pcommon.TraceID{0xa})
	l.SetSpanID(pcommon.SpanID{0xa})

	out := tracegraphOutput(t, td, map[string]any{
		"enable_messaging_system_latency_histogram": true,
		"exemplars": map[string]any{"enabled": true},
	})
	e, url := startOurs(t, func(c *Config) { c.EnableOpenMetrics = true })
	for _, md := range out {
		require.NoError(t, e.ConsumeMetrics(context.Background(), md))
	}
	e.renderNow()
	body, _ := promtest.Scrape(t, url, acceptProm3, false)
	want := `traces_service_graph_request_messaging_system_seconds_bucket{client="orders",connection_type="messaging_system",failed="false",otel_scope_name="traces_service_graph",otel_scope_schema_url="",otel_scope_version="",server="billing",le="0.4"} 1 # {span_id="0b00000000000000",trace_id="0b000000000000000000000000000000"} 0.25 `
	assert.Contains(t, string(body), want)
	assert.Contains(t, string(body), `traces_service_graph_request_messaging_system_seconds_sum{client="orders",connection_type="messaging_system",failed="false",otel_scope_name="traces_service_graph",otel_scope_schema_url="",otel_scope_version="",server="billing"} 0.25`)
}
