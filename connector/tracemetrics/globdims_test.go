package tracemetrics

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/connector/spanmetricsconnector"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// callsByAttributes returns the calls of one delta export by data point attributes
// (attrString), resources merged.
func callsByAttributes(md pmetric.Metrics) map[string]int64 {
	out := map[string]int64{}
	for _, rm := range md.ResourceMetrics().All() {
		for _, m := range rm.ScopeMetrics().At(0).Metrics().All() {
			if m.Type() != pmetric.MetricTypeSum || m.Name() != "traces.span.metrics.calls" {
				continue
			}
			for _, dp := range m.Sum().DataPoints().All() {
				attrs := pcommon.NewMap()
				dp.Attributes().CopyTo(attrs)
				attrs.Remove(series.CollectorInstanceKey)
				attrs.Remove(series.ServiceNameKey)
				attrs.Remove(series.SpanKindKey)
				attrs.Remove(series.StatusCodeKey)
				out[attrString(attrs)] += dp.IntValue()
			}
		}
	}
	return out
}

// A glob dimension takes every matching key of the span, else the event, else the resource,
// each once with the value of the first place it is found in; keys a named dimension or a
// built-in attribute writes stay theirs. Two spans with the same attributes are one series
// wherever each attribute came from (spanmetrics keys them by the order it visits them in, and
// would make two: one of the differences README.md lists).
func TestGlobDimensionsTakeMatchingAttributes(t *testing.T) {
	c, sink, clock, _ := startOurs(t, map[string]any{
		"aggregation_temporality":        delta,
		"dimensions":                     []any{dims("http.method")[0], globDim("k8s.*.name")},
		"calls_dimensions":               []any{globDim("http.*"), globDim("sampling.*")},
		"histogram":                      map[string]any{"disable": true},
		"enable_metrics_sampling_method": true,
	}, true)
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	res := rs.Resource().Attributes()
	res.PutStr(series.ServiceNameKey, "svc")
	res.PutStr("k8s.pod.name", "pod-r")
	res.PutStr("k8s.node.name", "node-r")
	res.PutStr("k8s.pod.label.name", "not matched: two segments between k8s and name")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	add := func(name string, attrs map[string]any) {
		sp := spans.AppendEmpty()
		sp.SetName(name)
		require.NoError(t, sp.Attributes().FromRaw(attrs))
	}
	// The span's k8s.pod.name wins over the resource's; http.method is the named dimension's
	// (written once), http.route the glob's; sampling.method is the connector's.
	add("a", map[string]any{"k8s.pod.name": "pod-s", "http.method": "GET", "http.route": "/x", "sampling.method": "forged"})
	// The same attribute set, k8s.node.name from the span this time: the same series.
	add("b", map[string]any{"k8s.node.name": "node-r"})
	add("b", map[string]any{})
	// An int and the string that spells it are one series, labelled with the first type.
	add("c", map[string]any{"k8s.shard.name": 3})
	add("c", map[string]any{"k8s.shard.name": "3"})
	require.NoError(t, c.ConsumeTraces(context.Background(), td))
	got := callsByAttributes(flushOnce(t, c, sink, clock, time.Minute))
	want := map[string]int64{
		`http.method=Str:"GET",http.route=Str:"/x",k8s.node.name=Str:"node-r",k8s.pod.name=Str:"pod-s",sampling.method=Str:"counted",span.name=Str:"a"`: 1,
		`k8s.node.name=Str:"node-r",k8s.pod.name=Str:"pod-r",sampling.method=Str:"counted",span.name=Str:"b"`:                                           2,
		`k8s.node.name=Str:"node-r",k8s.pod.name=Str:"pod-r",k8s.shard.name=Int:"3",sampling.method=Str:"counted",span.name=Str:"c"`:                    2,
	}
	require.Equal(t, want, got)
}

// In the events family an event's attribute comes between the span's and the resource's.
func TestGlobDimensionsOfEvents(t *testing.T) {
	c, sink, clock, _ := startOurs(t, map[string]any{
		"aggregation_temporality": delta,
		"events":                  map[string]any{"enabled": true, "dimensions": []any{globDim("k8s.*.name"), globDim("exception.*")}},
	}, true)
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(series.ServiceNameKey, "svc")
	rs.Resource().Attributes().PutStr("k8s.pod.name", "pod-r")
	rs.Resource().Attributes().PutStr("k8s.node.name", "node-r")
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetName("op")
	sp.Attributes().PutStr("k8s.node.name", "node-s")
	ev := sp.Events().AppendEmpty()
	ev.Attributes().PutStr("k8s.pod.name", "pod-e")
	ev.Attributes().PutStr("k8s.node.name", "node-e")
	ev.Attributes().PutStr("exception.type", "NPE")
	ev.Attributes().PutStr("exception.message", "first")
	sp.Events().AppendEmpty().Attributes().PutStr("exception.type", "Timeout")
	require.NoError(t, c.ConsumeTraces(context.Background(), td))
	md := flushOnce(t, c, sink, clock, time.Minute)
	events := map[string]int64{}
	for _, m := range md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().All() {
		if m.Name() != "traces.span.metrics.events" {
			continue
		}
		for _, dp := range m.Sum().DataPoints().All() {
			attrs := pcommon.NewMap()
			dp.Attributes().CopyTo(attrs)
			for _, k := range []string{series.CollectorInstanceKey, series.ServiceNameKey, series.SpanKindKey, series.StatusCodeKey, series.SpanNameKey} {
				attrs.Remove(k)
			}
			events[attrString(attrs)] += dp.IntValue()
		}
	}
	require.Equal(t, map[string]int64{
		`exception.message=Str:"first",exception.type=Str:"NPE",k8s.node.name=Str:"node-s",k8s.pod.name=Str:"pod-e"`: 1,
		`exception.type=Str:"Timeout",k8s.node.name=Str:"node-s",k8s.pod.name=Str:"pod-r"`:                           1,
	}, events)
}

// The difference kept on purpose: spanmetrics keys a glob series by its matches in the order
// it visits them (the span's, then the resource's), so two spans with the same attributes,
// one of them found on the span, become two data points with one attribute set; here they are
// one series.
func TestGlobSeriesAreOnePerAttributeSet(t *testing.T) {
	raw := map[string]any{
		"aggregation_temporality": delta,
		"dimensions":              []any{globDim("k8s.*.name")},
		"histogram":               map[string]any{"disable": true},
	}
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(series.ServiceNameKey, "svc")
	rs.Resource().Attributes().PutStr("k8s.a.name", "x")
	rs.Resource().Attributes().PutStr("k8s.b.name", "y")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	spans.AppendEmpty().SetName("op")
	sp := spans.AppendEmpty()
	sp.SetName("op")
	sp.Attributes().PutStr("k8s.b.name", "y") // the resource's value, found on the span
	calls := func(md pmetric.Metrics) []string {
		var out []string
		for _, rm := range md.ResourceMetrics().All() {
			for _, m := range rm.ScopeMetrics().At(0).Metrics().All() {
				for _, dp := range m.Sum().DataPoints().All() {
					out = append(out, fmt.Sprintf("%s=%d", attrString(dp.Attributes()), dp.IntValue()))
				}
			}
		}
		return out
	}
	stock := startConnector(t, spanmetricsconnector.NewFactory(), raw)
	stock.consume(td)
	got := calls(stock.flush())
	require.Len(t, got, 2, "spanmetrics: two data points")
	require.Equal(t, got[0][:len(got[0])-2], got[1][:len(got[1])-2], "with one attribute set")

	ours := startConnector(t, NewFactory(), raw)
	ours.consume(td)
	got = calls(settledFlush(t, ours))
	require.Len(t, got, 1)
	require.Contains(t, got[0], `k8s.a.name=Str:"x",k8s.b.name=Str:"y"`)
	require.True(t, strings.HasSuffix(got[0], "=2"), got[0])
}
