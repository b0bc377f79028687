package tracegraph

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// limitCall returns the client and server spans of one call from client to server (trace n),
// the client span with order.id and http.method, the server span with order.id.
func limitCall(client, server string, n int, order, method string, failed bool) []ptrace.Traces {
	mk := func(svc string, kind ptrace.SpanKind, id, parent byte) ptrace.Traces {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", svc)
		s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		s.SetKind(kind)
		var trace pcommon.TraceID
		binaryPut(trace[:], uint64(n)+1, 42)
		s.SetTraceID(trace)
		s.SetSpanID(pcommon.SpanID{id})
		if parent != 0 {
			s.SetParentSpanID(pcommon.SpanID{parent})
		}
		s.SetStartTimestamp(1_000_000_000)
		s.SetEndTimestamp(1_100_000_000)
		s.Attributes().PutStr("order.id", order)
		if kind == ptrace.SpanKindClient {
			s.Attributes().PutStr("http.method", method)
		}
		if failed {
			s.Status().SetCode(ptrace.StatusCodeError)
		}
		return td
	}
	return []ptrace.Traces{mk(client, ptrace.SpanKindClient, 1, 0), mk(server, ptrace.SpanKindServer, 2, 1)}
}

// labelsOf parses a flatten key's label set, "{a=1,b=2}".
func labelsOf(k string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(strings.Trim(k, "{}"), ",") {
		if name, v, ok := strings.Cut(kv, "="); ok {
			out[name] = v
		}
	}
	return out
}

// One client puts an order ID in an attribute that is a dimension. max_cardinality_per_label
// replaces only that label's values beyond the limit, per service: the edge keeps its series
// by method and failure, with exact requests; another client's values stay. max_series_per_edge
// then caps what is left of the pair's series (methods here): beyond it, requests go to the
// pair's overflow series, whose dimensions are all __cardinality_overflow__, still exact per
// client, server and failure. Both are counted in the connector's telemetry.
func TestDimensionLimitsKeepEdgesExact(t *testing.T) {
	const calls, perLabel, perEdge = 600, 10, 30
	c, sink := startTracegraph(t, func(cfg *Config) {
		cfg.Dimensions = []string{"order.id", "http.method"}
		cfg.MaxCardinalityPerLabel = perLabel
		cfg.MaxSeriesPerEdge = perEdge
		cfg.MetricsFlushInterval = ptr(time.Hour)
	})
	want := map[[3]string]int64{} // client, server, failed
	for i := range calls {
		failed := i%7 == 0
		consume(t, c, limitCall("shop", "orders", i, fmt.Sprintf("id-%d", i), fmt.Sprintf("M%d", i%40), failed)...)
		want[[3]string{"shop", "orders", fmt.Sprint(failed)}]++
		if i%3 == 0 { // a quiet client with three values
			consume(t, c, limitCall("cart", "orders", calls+i, fmt.Sprintf("cart-%d", i/3%3), "GET", false)...)
			want[[3]string{"cart", "orders", "false"}]++
		}
	}
	require.NoError(t, c.Shutdown(context.Background()))
	got := map[[3]string]int64{}
	values := map[string]map[string]bool{} // client → client_order_id values
	series := map[string]int{}             // client → series (overflow series excepted)
	overflowSeries := 0
	for k, v := range requestTotals(lastFlush(t, sink)) {
		l := labelsOf(k)
		got[[3]string{l["client"], l["server"], l["failed"]}] += v
		if values[l["client"]] == nil {
			values[l["client"]] = map[string]bool{}
		}
		values[l["client"]][l["client_order.id"]] = true
		// Server spans carry no http.method: only the pair's overflow series has the label.
		if l["server_http.method"] == labelOverflowValue {
			overflowSeries++
			continue
		}
		series[l["client"]]++
	}
	require.Equal(t, want, got, "requests per client, server and failure: exact")
	require.Len(t, values["cart"], 3, "the quiet client keeps its values")
	require.True(t, values["shop"][labelOverflowValue], "shop's order IDs overflowed")
	require.LessOrEqual(t, len(values["shop"]), perLabel+1, "at most the limit's values and the overflow value")
	require.Equal(t, perEdge, series["shop"], "shop → orders holds max_series_per_edge series")
	require.Positive(t, overflowSeries, "the pair reached max_series_per_edge")
	require.LessOrEqual(t, overflowSeries, 2, "the pair's overflow series, failed and not")
	require.Positive(t, c.tel.labelOverflowRequests.Load())
	require.Positive(t, c.tel.edgeOverflowRequests.Load())
}

// Values are held while a series has them: once the series of a value expire, new values
// get in; what the limits hold expires with them.
func TestDimensionLimitsFollowExpiry(t *testing.T) {
	c, sink := startTracegraph(t, func(cfg *Config) {
		cfg.Dimensions = []string{"order.id"}
		cfg.MaxCardinalityPerLabel = 2
		cfg.MaxSeriesPerEdge = 5
		cfg.SeriesExpiration = 50 * time.Millisecond
		cfg.CacheLoop = 10 * time.Millisecond
	})
	for i, o := range []string{"a", "b", "c"} {
		consume(t, c, limitCall("shop", "orders", i, o, "GET", false)...)
	}
	require.Eventually(t, func() bool { return c.tel.receivedSpans.Load() == 6 }, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return c.tel.series.Load() == 0 }, 5*time.Second, time.Millisecond)
	consume(t, c, limitCall("shop", "orders", 10, "d", "GET", false)...)
	require.NoError(t, c.Shutdown(context.Background()))
	require.Equal(t, map[string]int64{"{client=shop,client_order.id=d,connection_type=,failed=false,server=orders,server_order.id=d}": 1},
		requestTotals(lastFlush(t, sink)))
	require.Len(t, c.agg.series.limits.perEdge, 1, "the pair of d's series only: nothing held for expired series")
	for _, n := range c.agg.series.limits.perEdge {
		require.EqualValues(t, 1, n)
	}
	for i := range c.agg.series.limits.held {
		require.Len(t, c.agg.series.limits.held[i], 1, "label %d: d alone", i)
	}
}
