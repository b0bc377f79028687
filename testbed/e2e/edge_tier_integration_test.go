//go:build integration

package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The edge tier of TestEdgeTierHoldsEachEdgeOnce: its topic's partitions and its gateways.
const (
	etPartitions = 6
	etGateways   = 2
)

// TestEdgeTierHoldsEachEdgeOnce sends the 2000 calls of TestGraphTierPairsAcrossServiceKeys
// through the agent to three graph gateways with the configs/graph-gateway-edges.yaml overlay (12
// partitions, by trace ID), which hand their edges as deltas to two edge gateways
// (configs/edge-gateway.yaml, 6 partitions, by edge):
//   - every edge's requests, failures and latency count, summed over the edge gateways, are the
//     calls sent, though each edge's calls were paired on several graph gateways;
//   - each edge is held by exactly one edge gateway, as one series per label set: the graph
//     gateways' deltas of an edge meet there, none dropped as an overlap;
//   - once the calls stop, the graph gateways hold no edge.
func TestEdgeTierHoldsEachEdgeOnce(t *testing.T) {
	broker := startKafka(t)
	const spansTopic, graphTopic, edgeTopic = "et-spans", "et-graph", "et-edges"
	createTopic(t, spansTopic, gtPartitions)
	createTopic(t, graphTopic, gtPartitions)
	createTopic(t, edgeTopic, etPartitions)
	graph := make([]*gateway, gtGateways)
	for i := range graph {
		graph[i] = startGraphGateway(t, broker, graphTopic, "et-graph",
			map[string]string{"KAFKA_EDGE_TOPIC": edgeTopic}, configPath("graph-gateway-edges.yaml"))
	}
	edges := make([]*gateway, etGateways)
	for i := range edges {
		edges[i] = startServing(t, "edge-gateway.yaml", map[string]string{
			"KAFKA_BROKERS": broker, "KAFKA_EDGE_TOPIC": edgeTopic, "KAFKA_EDGE_GROUP": "et-edges",
		})
	}
	requireAllAssigned(t, graphTopic, graph)
	requireAllAssigned(t, edgeTopic, edges)
	ag := startAgent(t, broker, spansTopic, agentGraphOverlay(t, graphTopic, gtPartitions))
	sender := newESOTLPSender(t, ag.otlpHTTP)

	want, wantFailed := sendGTCalls(t, sender, 3)

	counted := 0
	require.True(t, waitFor(2*time.Minute, func() bool {
		c, err := scrapeEdges(edges)
		counted = sum(c.requests)
		return err == nil && counted >= gtCalls
	}), "requests on the edge tier: %d of %d", counted, gtCalls)
	// Two more flushes of the graph gateways: nothing beyond the calls sent comes.
	time.Sleep(3 * time.Second)
	c, err := scrapeEdges(edges)
	require.NoError(t, err)
	require.Equal(t, want, c.requests, "requests per edge, summed over the edge gateways")
	require.Equal(t, wantFailed, c.failed, "failed requests per edge")
	require.Equal(t, want, c.latencyCount, "server latency count per edge")
	for e, n := range c.holders {
		require.Equal(t, 1, n, "edge %v is held by %d edge gateways", e, n)
	}
	for i, g := range edges {
		held := 0
		for _, n := range mustScrapeEdges(t, g).holders {
			held += n
		}
		t.Logf("edge gateway %d: %d of %d edges", i, held, len(want))
		// Keyed by the edge, the edges spread over the partitions and so over the gateways.
		require.Positive(t, held, "edge gateway %d holds no edge: the edge topic is not keyed by the edge", i)
	}
	for i, g := range edges {
		dropped := telemetrySum(t, g.telemetryURL, "otelcol_exporter_cachedprom_adjusted_points_total", map[string]string{"reason": "out_of_order"})
		require.LessOrEqual(t, dropped, 0.0, "edge gateway %d dropped deltas as overlaps", i)
	}
	// Each graph gateway paired some of every edge's calls (trace-ID buckets spread them), and
	// holds none of them once the calls stop: a series idle for an interval is removed.
	for i, g := range graph {
		total := telemetrySum(t, g.telemetryURL, "otelcol_connector_tracegraph_total_edges_total", nil)
		require.Positive(t, total, "graph gateway %d paired no call", i)
	}
	require.True(t, waitFor(30*time.Second, func() bool {
		for _, g := range graph {
			if telemetrySum(t, g.telemetryURL, "otelcol_connector_tracegraph_series", nil) != 0 {
				return false
			}
		}
		return true
	}), "the graph gateways still hold edges after the calls stopped")
	t.Logf("%d calls on %d edges, paired over %d graph gateways, each edge held by one of %d edge gateways",
		sum(c.requests), len(c.requests), len(graph), len(edges))
}

func mustScrapeEdges(t *testing.T, g *gateway) edgeCounts {
	t.Helper()
	c, err := scrapeEdges([]*gateway{g})
	require.NoError(t, err)
	return c
}
