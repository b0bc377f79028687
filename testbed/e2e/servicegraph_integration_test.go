//go:build integration

package e2e

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// The calls TestServiceGraphConfigServesServiceMap sends, one trace each: the user calls service a
// (a root SERVER span), a calls b (a CLIENT span of a, the SERVER span of b as its child), and some of
// b's handlers query PostgreSQL (a CLIENT span of b, no server span: the database is not traced).
const (
	sgCalls         = 10
	sgServerErrors  = 3 // b answers with an error
	sgClientErrors  = 1 // a's client span records an error, b's does not (a timeout, say)
	sgVirtualDBs    = 2 // b → PostgreSQL spans with db.system only: a virtual node once expired
	sgVirtualDBErrs = 1
	sgNamedDBs      = 1 // b → PostgreSQL spans with db.name too: a database edge at once
	sgClientDur     = 50 * time.Millisecond
	sgServerDur     = 20 * time.Millisecond
	sgDBDur         = 5 * time.Millisecond
	// sgPairingDelay separates b's export from a's, as two services' SDKs batching on their own
	// schedules (5 s by default) do. It is longer than contrib's default store ttl (2 s): the a → b
	// edges are counted only because configs/servicegraph.yaml sizes the store's ttl larger.
	sgPairingDelay = 5 * time.Second
)

// sgSpan appends one span to ss.
func sgSpan(ss ptrace.ScopeSpans, kind ptrace.SpanKind, trace pcommon.TraceID, id, parent pcommon.SpanID, end time.Time, d time.Duration, failed bool) ptrace.Span {
	s := ss.Spans().AppendEmpty()
	s.SetName(kind.String())
	s.SetKind(kind)
	s.SetTraceID(trace)
	s.SetSpanID(id)
	s.SetParentSpanID(parent)
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(end.Add(-d)))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
	if failed {
		s.Status().SetCode(ptrace.StatusCodeError)
	}
	return s
}

// sgTraces returns the spans of services a and b, one ptrace.Traces per service as each would export.
func sgTraces() (a, b ptrace.Traces) {
	a, b = ptrace.NewTraces(), ptrace.NewTraces()
	scope := func(td ptrace.Traces, service string) ptrace.ScopeSpans {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", service)
		return rs.ScopeSpans().AppendEmpty()
	}
	as, bs := scope(a, "a"), scope(b, "b")
	now := time.Now()
	for i := range sgCalls {
		trace := pcommon.TraceID{0x5e, 0x9a, byte(i), 1}
		root := pcommon.SpanID{0x5e, byte(i), 1}
		client := pcommon.SpanID{0x5e, byte(i), 2}
		server := pcommon.SpanID{0x5e, byte(i), 3}
		sgSpan(as, ptrace.SpanKindServer, trace, root, pcommon.SpanID{}, now, 100*time.Millisecond, false)
		sgSpan(as, ptrace.SpanKindClient, trace, client, root, now, sgClientDur, i < sgClientErrors)
		sgSpan(bs, ptrace.SpanKindServer, trace, server, client, now, sgServerDur, i >= sgCalls-sgServerErrors)
		switch {
		case i < sgVirtualDBs:
			db := sgSpan(bs, ptrace.SpanKindClient, trace, pcommon.SpanID{0x5e, byte(i), 4}, server, now, sgDBDur, i < sgVirtualDBErrs)
			db.Attributes().PutStr("db.system", "postgresql")
		case i < sgVirtualDBs+sgNamedDBs:
			db := sgSpan(bs, ptrace.SpanKindClient, trace, pcommon.SpanID{0x5e, byte(i), 4}, server, now, sgDBDur, false)
			db.Attributes().PutStr("db.system", "postgresql")
			db.Attributes().PutStr("db.name", "orders")
		}
	}
	return a, b
}

// histogramSum adds the _sum of every series of a histogram family whose labels include all of want.
func histogramSum(fams map[string]*dto.MetricFamily, family string, want map[string]string) float64 {
	var sum float64
	f, ok := fams[family]
	if !ok {
		return 0
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		sum += m.GetHistogram().GetSampleSum()
	}
	return sum
}

// sendServiceGraphCalls sends sgTraces to the collector of env over OTLP gRPC, b's spans first
// and a's sgPairingDelay later.
func sendServiceGraphCalls(t *testing.T, env map[string]string) {
	t.Helper()
	conn, err := grpc.NewClient(env["OTLP_GRPC_ENDPOINT"], grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)
	export := func(td ptrace.Traces) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
		require.NoError(t, err)
	}
	a, b := sgTraces()
	// b's server spans end before a's client spans, so they arrive first and wait in the store.
	export(b)
	time.Sleep(sgPairingDelay)
	export(a)
}

// requireServiceMap waits for the service graph of sgTraces on metricsURL (configs/servicegraph.yaml
// or configs/tracegraph.yaml, 1 s flushes, b's spans 5 s before a's) and requires it exact: the
// a → b requests, failures and both duration histograms, the database edge, the virtual nodes
// (PostgreSQL called by b, the user calling a), nothing else, and the RED calls of every span.
func requireServiceMap(t *testing.T, metricsURL string) {
	t.Helper()
	const total = "traces_service_graph_request_total"
	const failed = "traces_service_graph_request_failed_total"
	const serverHist = "traces_service_graph_request_server_seconds"
	const clientHist = "traces_service_graph_request_client_seconds"
	ab := map[string]string{"client": "a", "server": "b", "connection_type": ""}
	userA := map[string]string{"client": "user", "server": "a", "connection_type": "virtual_node"}
	// The last edges to appear: a's root spans wait the whole ttl (10 s) for a caller.
	got := WaitForSum(t, metricsURL, total, userA, sgCalls, 60*time.Second)
	require.Equal(t, float64(sgCalls), got, "user → a requests (virtual node from a's root server spans)")
	// b's database spans expired before a's root spans; one more flush so every series is written.
	time.Sleep(2 * time.Second)

	fams := Scrape(t, metricsURL)
	wantFailed := float64(sgServerErrors + sgClientErrors)
	sum, _ := SumSeries(fams, total, ab)
	require.Equal(t, float64(sgCalls), sum, "a → b requests")
	sum, _ = SumSeries(fams, total, map[string]string{"client": "a", "server": "b", "failed": "true"})
	require.Equal(t, wantFailed, sum, "a → b requests labelled failed")
	sum, _ = SumSeries(fams, failed, ab)
	require.Equal(t, wantFailed, sum, "a → b failed requests")
	sum, _ = SumSeries(fams, serverHist, ab)
	require.Equal(t, float64(sgCalls), sum, "a → b server duration count")
	sum, _ = SumSeries(fams, clientHist, ab)
	require.Equal(t, float64(sgCalls), sum, "a → b client duration count")
	require.InDelta(t, sgCalls*sgServerDur.Seconds(), histogramSum(fams, serverHist, ab), 1e-9, "a → b server duration sum")
	require.InDelta(t, sgCalls*sgClientDur.Seconds(), histogramSum(fams, clientHist, ab), 1e-9, "a → b client duration sum")

	virtualDB := map[string]string{"client": "b", "server": "postgresql", "connection_type": "virtual_node"}
	sum, _ = SumSeries(fams, total, virtualDB)
	require.Equal(t, float64(sgVirtualDBs), sum, "b → postgresql requests (virtual node from db.system)")
	sum, _ = SumSeries(fams, failed, virtualDB)
	require.Equal(t, float64(sgVirtualDBErrs), sum, "b → postgresql failed requests")
	sum, _ = SumSeries(fams, clientHist, virtualDB)
	require.Equal(t, float64(sgVirtualDBs), sum, "b → postgresql client duration count")

	namedDB := map[string]string{"client": "b", "server": "orders", "connection_type": "database"}
	sum, _ = SumSeries(fams, total, namedDB)
	require.Equal(t, float64(sgNamedDBs), sum, "b → orders requests (database edge from db.name)")
	sum, _ = SumSeries(fams, serverHist, namedDB)
	require.Equal(t, float64(sgNamedDBs), sum, "b → orders server duration count (the client span's)")
	require.InDelta(t, sgNamedDBs*sgDBDur.Seconds(), histogramSum(fams, serverHist, namedDB), 1e-9, "b → orders server duration sum")

	// Nothing else: every request counted is one of the edges above, none went to "unknown".
	sum, _ = SumSeries(fams, total, nil)
	require.Equal(t, float64(2*sgCalls+sgVirtualDBs+sgNamedDBs), sum, "requests on every edge")
	_, n := SumSeries(fams, total, map[string]string{"server": "unknown"})
	require.Zero(t, n, "edges to the virtual node unknown (halves expired unpaired)")

	// The RED metrics of default.yaml's job are still there: every span of a and b counted once.
	sum, _ = SumSeries(fams, "traces_span_metrics_calls_total", nil)
	require.Equal(t, float64(3*sgCalls+sgVirtualDBs+sgNamedDBs), sum, "RED calls of every span")

}

// TestServiceGraphConfigServesServiceMap runs configs/servicegraph.yaml as shipped (endpoints on free
// ports, 1 s flushes), sends the calls above with b's spans 5 s before a's, and checks the exact
// service graph on /metrics: the a → b requests, failures and both duration histograms, the database
// edge, and the virtual nodes (PostgreSQL called by b, the user calling a) that contrib makes when
// the unpaired halves expire; then that the store expired exactly those halves and dropped nothing.
func TestServiceGraphConfigServesServiceMap(t *testing.T) {
	env, metricsURL := defaultEnv(t)
	StartCollector(t, configPath("servicegraph.yaml"), env)

	sendServiceGraphCalls(t, env)
	requireServiceMap(t, metricsURL)

	// The store: the halves that expired are exactly those without a partner (b's db.system spans,
	// a's root spans), and none was dropped for want of room.
	own := Scrape(t, telemetryURLOf(env))
	expired, n := SumSeries(own, "otelcol_connector_servicegraph_expired_edges_total", nil)
	require.Equal(t, 1, n, "expired edges counter on the own metrics endpoint")
	require.Equal(t, float64(sgVirtualDBs+sgCalls), expired, "expired edges")
	// The dropped counter appears only after a first drop (named like the expired one above); absent is 0.
	dropped, _ := SumSeries(own, "otelcol_connector_servicegraph_dropped_spans_total", nil)
	require.Zero(t, dropped, "spans dropped by a full store")
}
