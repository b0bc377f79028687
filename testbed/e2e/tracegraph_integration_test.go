//go:build integration

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestTraceGraphConfigServesServiceMap runs configs/tracegraph.yaml as shipped (endpoints on free
// ports, 1 s flushes) with the calls of TestServiceGraphConfigServesServiceMap (sgTraces: b's
// spans 5 s before a's), and requires the same exact service graph on /metrics that contrib's
// servicegraph serves there: the a → b requests, failures and both duration histograms, the
// database edge, the virtual nodes (PostgreSQL called by b, the user calling a); then that
// tracegraph's store expired exactly the unpaired halves, evicted none and refused no span.
func TestTraceGraphConfigServesServiceMap(t *testing.T) {
	env, metricsURL := defaultEnv(t)
	StartCollector(t, configPath("tracegraph.yaml"), env)

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
	export(b)
	time.Sleep(sgPairingDelay)
	export(a)

	const total = "traces_service_graph_request_total"
	const failed = "traces_service_graph_request_failed_total"
	const serverHist = "traces_service_graph_request_server_seconds"
	const clientHist = "traces_service_graph_request_client_seconds"
	ab := map[string]string{"client": "a", "server": "b", "connection_type": ""}
	userA := map[string]string{"client": "user", "server": "a", "connection_type": "virtual_node"}
	// The last edges to appear: a's root spans wait the whole ttl (10 s) for a caller.
	got := WaitForSum(t, metricsURL, total, userA, sgCalls, 60*time.Second)
	require.Equal(t, float64(sgCalls), got, "user → a requests (virtual node from a's root server spans)")
	time.Sleep(2 * time.Second) // one more flush, so that nothing counted later is missed below

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

	namedDB := map[string]string{"client": "b", "server": "orders", "connection_type": "database"}
	sum, _ = SumSeries(fams, total, namedDB)
	require.Equal(t, float64(sgNamedDBs), sum, "b → orders requests (database edge from db.name)")
	require.InDelta(t, sgNamedDBs*sgDBDur.Seconds(), histogramSum(fams, serverHist, namedDB), 1e-9, "b → orders server duration sum")

	sum, _ = SumSeries(fams, total, nil)
	require.Equal(t, float64(2*sgCalls+sgVirtualDBs+sgNamedDBs), sum, "requests on every edge")
	_, n := SumSeries(fams, total, map[string]string{"server": "unknown"})
	require.Zero(t, n, "edges to the virtual node unknown (halves expired unpaired)")

	own := Scrape(t, telemetryURLOf(env))
	expired, n := SumSeries(own, "otelcol_connector_tracegraph_expired_edges_total", nil)
	require.Equal(t, 1, n, "expired edges counter on the own metrics endpoint")
	require.Equal(t, float64(sgVirtualDBs+sgCalls), expired, "expired edges")
	evicted, n := SumSeries(own, "otelcol_connector_tracegraph_evicted_edges_total", nil)
	require.Equal(t, 1, n, "evicted edges counter")
	require.Zero(t, evicted, "halves evicted by a full store")
	dropped, n := SumSeries(own, "otelcol_connector_tracegraph_dropped_spans_total", nil)
	require.Equal(t, 1, n, "dropped spans counter")
	require.Zero(t, dropped, "spans refused")
	pending, _ := SumSeries(own, "otelcol_connector_tracegraph_pending_edges", nil)
	require.Zero(t, pending, "halves still waiting")
}
