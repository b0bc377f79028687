package tracemetrics

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// labelSpan is a span of the per-label tests: its series' attributes and an order ID.
type labelSpan struct {
	svc, name, method, order string
	status                   ptrace.StatusCode
}

func labelTraces(spans []labelSpan) ptrace.Traces {
	td := ptrace.NewTraces()
	base := pcommon.NewTimestampFromTime(testStart.Add(-time.Minute))
	scopes := map[string]ptrace.SpanSlice{}
	for _, s := range spans {
		ss, ok := scopes[s.svc]
		if !ok {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr(series.ServiceNameKey, s.svc)
			ss = rs.ScopeSpans().AppendEmpty().Spans()
			scopes[s.svc] = ss
		}
		sp := ss.AppendEmpty()
		sp.SetName(s.name)
		sp.SetKind(ptrace.SpanKindServer)
		sp.Status().SetCode(s.status)
		sp.Attributes().PutStr("http.method", s.method)
		sp.Attributes().PutStr("order.id", s.order)
		sp.SetStartTimestamp(base)
		sp.SetEndTimestamp(base + pcommon.Timestamp(time.Millisecond))
	}
	return td
}

// labelKey is a calls series of the per-label tests.
type labelKey struct {
	svc, name, status, method, order string
	overflow                         bool
}

func labelCalls(t *testing.T, md pmetric.Metrics) map[labelKey]int64 {
	t.Helper()
	out := map[labelKey]int64{}
	str := func(m pcommon.Map, k string) string {
		if v, ok := m.Get(k); ok {
			return v.AsString()
		}
		return ""
	}
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Type() != pmetric.MetricTypeSum {
					continue
				}
				for _, dp := range m.Sum().DataPoints().All() {
					a := dp.Attributes()
					_, ov := a.Get(series.OverflowKey)
					k := labelKey{svc: str(a, series.ServiceNameKey), name: str(a, series.SpanNameKey), status: str(a, series.StatusCodeKey),
						method: str(a, "http.method"), order: str(a, "order.id"), overflow: ov}
					out[k] += dp.IntValue()
				}
			}
		}
	}
	return out
}

// labelGauge returns a connector gauge by its label attribute.
func labelGauge(t *testing.T, tel *componenttest.Telemetry, name string) map[string]int64 {
	t.Helper()
	m, err := tel.GetMetric("otelcol_connector_tracemetrics_" + name)
	require.NoError(t, err)
	out := map[string]int64{}
	for _, dp := range m.Data.(metricdata.Gauge[int64]).DataPoints {
		l, ok := dp.Attributes.Value("label")
		require.True(t, ok)
		out[l.AsString()] = dp.Value
	}
	return out
}

// A service puts an order ID in an attribute that is a dimension: max_cardinality_per_label
// replaces only that label's value, by __cardinality_overflow__, so each of its operations
// keeps its series per method and status code, with exact calls; no series goes to an
// overflow series (otel.metric.overflow), and another service's values of the same label,
// within the limit, are untouched. The label's demand and the values it refused are the
// label's own telemetry, estimated within a few percent; overflow_spans counts the spans
// relabelled.
func TestPerLabelLimitReplacesOnlyThatLabel(t *testing.T) {
	const limit, ids = 20, 4000
	for _, temporality := range []string{delta, cumulative} {
		t.Run(temporality, func(t *testing.T) {
			c, sink, clock, tel := startOurs(t, map[string]any{
				"aggregation_temporality":   temporality,
				"metrics_flush_interval":    time.Second,
				"dimensions":                dims("http.method", "order.id"),
				"max_cardinality_per_label": limit,
				"max_series_per_service":    1000,
			}, true)
			methods := []string{"GET", "POST"}
			statuses := []ptrace.StatusCode{ptrace.StatusCodeUnset, ptrace.StatusCodeError}
			var spans []labelSpan
			for i := range ids {
				spans = append(spans, labelSpan{svc: "orders", name: fmt.Sprintf("op-%d", i%5), method: methods[i%2],
					order: fmt.Sprintf("id-%d", i), status: statuses[i/2%2]})
				// A quiet service with a handful of values of the same label.
				if i%10 == 0 {
					spans = append(spans, labelSpan{svc: "cart", name: "add", method: "POST", order: fmt.Sprintf("cart-%d", i/10%3)})
				}
			}
			var all map[labelKey]int64
			for iv := range 2 {
				for i := 0; i < len(spans); i += 100 {
					require.NoError(t, c.ConsumeTraces(context.Background(), labelTraces(spans[i:min(i+100, len(spans))])))
				}
				got := labelCalls(t, flushOnce(t, c, sink, clock, time.Second))
				if temporality == cumulative {
					all = got
				} else if all == nil {
					all = got
				} else {
					for k, v := range got {
						all[k] += v
					}
				}
				want := map[labelKey]int64{} // per series but order.id
				for _, s := range spans {
					want[labelKey{svc: s.svc, name: s.name, method: s.method, status: statusName(s.status)}] += int64(iv + 1)
				}
				gotBy := map[labelKey]int64{}
				values := map[string]map[string]bool{}
				for k, v := range all {
					require.False(t, k.overflow, "no series went to an overflow series: %+v", k)
					if values[k.svc] == nil {
						values[k.svc] = map[string]bool{}
					}
					values[k.svc][k.order] = true
					k.order = ""
					gotBy[k] += v
				}
				require.Equal(t, want, gotBy, "interval %d: calls per service, span name, status and method, exact", iv)
				require.True(t, values["orders"][series.LabelOverflowValue], "the exploding label overflowed")
				require.Len(t, values["orders"], limit+1, "orders: the first %d values and the overflow value", limit)
				require.Len(t, values["cart"], 3, "cart keeps its own values")
				require.False(t, values["cart"][series.LabelOverflowValue])
			}
			demand := labelGauge(t, tel, "label_demand")
			require.InDelta(t, ids+3, demand["order.id"], 0.05*ids, "demand of order.id")
			require.InDelta(t, 2, demand["http.method"], 0.5, "demand of http.method")
			refused := labelGauge(t, tel, "label_overflow_values")
			require.InDelta(t, ids-limit, refused["order.id"], 0.05*ids, "values of order.id refused")
			require.Zero(t, refused["http.method"])
			byLimit := seriesCounterByLimit(t, tel, "overflow_spans")
			require.EqualValues(t, 2*(ids-limit), byLimit[series.LabelLimit], "spans counted with a replaced value")
			require.Zero(t, byLimit["max_series_per_service"])
		})
	}
}

func statusName(s ptrace.StatusCode) string {
	switch s {
	case ptrace.StatusCodeError:
		return "STATUS_CODE_ERROR"
	case ptrace.StatusCodeOk:
		return "STATUS_CODE_OK"
	}
	return "STATUS_CODE_UNSET"
}

// After a label has overflowed, it admits no new value while the explosion goes on, even as
// series of held values expire (their room does not go to the next IDs); once no value has
// been refused for the window (series_expiration here), new values get in again.
func TestPerLabelLimitReopensAfterTheExplosion(t *testing.T) {
	c, sink, clock, _ := startOurs(t, map[string]any{
		"aggregation_temporality":   delta,
		"metrics_flush_interval":    time.Second,
		"series_expiration":         5 * time.Second,
		"dimensions":                dims("order.id"),
		"max_cardinality_per_label": 2,
	}, true)
	send := func(orders ...string) map[labelKey]int64 {
		var spans []labelSpan
		for _, o := range orders {
			spans = append(spans, labelSpan{svc: "orders", name: "get", order: o})
		}
		require.NoError(t, c.ConsumeTraces(context.Background(), labelTraces(spans)))
		return labelCalls(t, flushOnce(t, c, sink, clock, time.Second))
	}
	orderOf := func(got map[labelKey]int64) map[string]int64 {
		out := map[string]int64{}
		for k, v := range got {
			out[k.order] += v
		}
		return out
	}
	require.Equal(t, map[string]int64{"a": 1, "b": 1, series.LabelOverflowValue: 1}, orderOf(send("a", "b", "c")))
	// a and b go idle and expire; the explosion goes on: d still overflows.
	for range 6 {
		require.Equal(t, map[string]int64{series.LabelOverflowValue: 1}, orderOf(send("d")))
	}
	// Quiet for the window (5 s): a new value has its series again.
	for range 6 {
		send()
	}
	require.Equal(t, map[string]int64{"e": 1}, orderOf(send("e")))
}

// A span of an exploded label (a new value every span) costs no allocation: the key is
// rewritten into a scratch buffer, the held values are looked up, the demand sketches count.
func TestPerLabelLimitAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	r := startConnector(t, NewFactory(), map[string]any{
		"dimensions":                dims("http.method", "order.id"),
		"max_cardinality_per_label": 10,
	})
	c := r.conn.(*connectorImp)
	var batches []ptrace.Traces
	id := 0
	for range 64 {
		var spans []labelSpan
		for i := range 200 {
			spans = append(spans, labelSpan{svc: fmt.Sprintf("svc-%d", i%3), name: fmt.Sprintf("op-%d", i%5), method: "GET", order: fmt.Sprintf("id-%d", id)})
			id++
		}
		batches = append(batches, labelTraces(spans))
	}
	i := 0
	call := func() {
		require.NoError(t, c.ConsumeTraces(context.Background(), batches[i%len(batches)]))
		i++
		if i%256 == 0 {
			c.settle(t)
		}
	}
	testing.AllocsPerRun(2048, call)
	allocs := testing.AllocsPerRun(2048, call)
	require.LessOrEqual(t, allocs, float64(maxAllocsPerCall), "allocations per 200-span call")
	c.settle(t)
	require.Positive(t, c.tel.LabelOverflowSpans.Load(), "the measured calls replaced values")
}

// BenchmarkPerLabelLimit measures what an exploded label costs a span, aggregation included
// (1 producer, 1000-span requests, 3 services × 5 operations, a new order ID every span): the
// same traffic without order.id as a dimension, and with it limited by
// max_cardinality_per_label, where every span's value is replaced (its series key rewritten,
// the held values looked up, the demand counted).
func BenchmarkPerLabelLimit(b *testing.B) {
	var input []ptrace.Traces
	id := 0
	for range 256 {
		var spans []labelSpan
		for i := range 1000 {
			spans = append(spans, labelSpan{svc: fmt.Sprintf("svc-%d", i%3), name: fmt.Sprintf("op-%d", i%5), method: "GET", order: fmt.Sprintf("id-%d", id)})
			id++
		}
		input = append(input, labelTraces(spans))
	}
	for _, v := range []struct {
		name string
		raw  map[string]any
	}{
		{"order.id not a dimension", map[string]any{"dimensions": dims("http.method")}},
		{"order.id limited", map[string]any{"dimensions": dims("http.method", "order.id"), "max_cardinality_per_label": 100}},
	} {
		b.Run(v.name, func(b *testing.B) {
			r := startConnector(b, NewFactory(), v.raw)
			measureConsume(b, r, input, 1)
			if c := r.conn.(*connectorImp); v.raw["max_cardinality_per_label"] != nil {
				require.Positive(b, c.tel.LabelOverflowSpans.Load(), "values were replaced")
			}
		})
	}
}
