//go:build integration

package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"
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

	sendServiceGraphCalls(t, env)
	requireServiceMap(t, metricsURL)

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
