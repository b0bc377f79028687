//go:build integration

package e2e

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
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
	graph, edges, sender := startEdgeTier(t, "et")
	want, wantFailed := sendGTCalls(t, sender, 3)

	c := settledEdges(t, graph, edges, gtCalls, 2*time.Minute)
	require.Equal(t, want, c.requests, "requests per edge, summed over the edge gateways")
	require.Equal(t, wantFailed, c.failed, "failed requests per edge")
	require.Equal(t, want, c.latencyCount, "server latency count per edge")
	for e, n := range c.holders {
		require.Equal(t, 1, n, "edge %v is held by %d edge gateways", e, n)
	}
	// servicegraph's labels, nothing more: the edge back from the resource, the writer (a scope
	// attribute) and the scope itself off the labels.
	for _, g := range edges {
		for _, m := range Scrape(t, g.metricsURL)["traces_service_graph_request_total"].GetMetric() {
			var names []string
			for _, lp := range m.GetLabel() {
				names = append(names, lp.GetName())
			}
			require.Equal(t, []string{"client", "connection_type", "failed", "server"}, names)
		}
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
		dropped := telemetrySum(t, g.telemetryURL, "otelcol_exporter_cachedprom_dropped_points_total", map[string]string{"reason": "out_of_order"})
		require.LessOrEqual(t, dropped, 0.0, "edge gateway %d dropped deltas as overlaps", i)
	}
	requireGraphGatewaysEmpty(t, graph)
	t.Logf("%d calls on %d edges, paired over %d graph gateways, each edge held by one of %d edge gateways",
		sum(c.requests), len(c.requests), len(graph), len(edges))
}

// TestEdgeTierAtTenThousandEdges is TestEdgeTierHoldsEachEdgeOnce at 9,900 edges: 39,600 calls
// among 100 services (4 on each ordered pair), each edge exact and held by one of the two edge
// gateways, none dropped as an overlap, and the graph gateways empty once the calls stop. It logs
// the peak RSS of every gateway.
func TestEdgeTierAtTenThousandEdges(t *testing.T) {
	const services, pairs, perRequest = 100, 100 * 99, 1100
	const calls = 4 * pairs
	graph, edges, sender := startEdgeTier(t, "ek")
	svc := func(i int) string { return fmt.Sprintf("gt%03d", i) }
	edge := func(i int) (client, server string) {
		p := i % pairs
		c := p / (services - 1)
		return svc(c), svc((c + 1 + p%(services-1)) % services)
	}
	want := map[[2]string]int{}
	for first := 0; first < calls; first += perRequest {
		clientSide, serverSide := ptrace.NewTraces(), ptrace.NewTraces()
		now := time.Now()
		for i := first; i < first+perRequest; i++ {
			c, s := edge(i)
			want[[2]string{c, s}]++
			var trace pcommon.TraceID
			trace[0] = 0x55
			binary.BigEndian.PutUint64(trace[8:], splitmix64(uint64(i)+4<<40))
			id := func(k byte) pcommon.SpanID { return pcommon.SpanID{0x55, k, byte(i >> 16), byte(i >> 8), byte(i)} }
			for _, h := range []struct {
				td         ptrace.Traces
				service    string
				kind       ptrace.SpanKind
				id, parent pcommon.SpanID
			}{{clientSide, c, ptrace.SpanKindClient, id(1), pcommon.SpanID{}}, {serverSide, s, ptrace.SpanKindServer, id(2), id(1)}} {
				rs := h.td.ResourceSpans().AppendEmpty()
				rs.Resource().Attributes().PutStr("service.name", h.service)
				sgSpan(rs.ScopeSpans().AppendEmpty(), h.kind, trace, h.id, h.parent, now, 10*time.Millisecond, false)
			}
		}
		require.NoError(t, sender.send(serverSide))
		require.NoError(t, sender.send(clientSide))
	}
	c := settledEdges(t, graph, edges, calls, 3*time.Minute)
	require.Len(t, c.requests, pairs)
	require.Equal(t, want, c.requests, "requests per edge")
	require.Equal(t, want, c.latencyCount, "server latency count per edge")
	for e, n := range c.holders {
		require.Equal(t, 1, n, "edge %v is held by %d edge gateways", e, n)
	}
	for i, g := range edges {
		dropped := telemetrySum(t, g.telemetryURL, "otelcol_exporter_cachedprom_dropped_points_total", map[string]string{"reason": "out_of_order"})
		require.LessOrEqual(t, dropped, 0.0, "edge gateway %d dropped deltas as overlaps", i)
		t.Logf("edge gateway %d: %d edges, peak RSS %d MiB", i, len(mustScrapeEdges(t, g).holders), peakRSSMiB(t, g.Collector))
	}
	requireGraphGatewaysEmpty(t, graph)
	for i, g := range graph {
		t.Logf("graph gateway %d: peak RSS %d MiB", i, peakRSSMiB(t, g.Collector))
	}
}

// settledEdges waits until the edge gateways count calls requests, then two more flushes of the
// graph gateways (nothing beyond the calls sent may come), and returns what they serve.
func settledEdges(t *testing.T, graph, edges []*gateway, calls int, timeout time.Duration) edgeCounts {
	t.Helper()
	start := time.Now()
	counted := 0
	if !waitFor(timeout, func() bool {
		c, err := scrapeEdges(edges)
		counted = sum(c.requests)
		return err == nil && counted >= calls
	}) {
		logTierTelemetry(t, graph, edges)
		t.Fatalf("requests on the edge tier: %d of %d", counted, calls)
	}
	t.Logf("every call on the edge tier %v after the last request", time.Since(start).Round(time.Second))
	time.Sleep(3 * time.Second)
	c, err := scrapeEdges(edges)
	require.NoError(t, err)
	return c
}

// startEdgeTier starts Kafka with the topics of an edge tier named by prefix, gtGateways graph
// gateways with the configs/graph-gateway-edges.yaml overlay (gtPartitions partitions), etGateways
// edge gateways (etPartitions partitions) and an agent with configs/agent-graph.yaml, and returns
// the gateways and an OTLP sender to the agent.
func startEdgeTier(t *testing.T, prefix string) (graph, edges []*gateway, sender *esOTLPSender) {
	t.Helper()
	broker := startKafka(t)
	spansTopic, graphTopic, edgeTopic := prefix+"-spans", prefix+"-graph", prefix+"-edges"
	createTopic(t, spansTopic, gtPartitions)
	createTopic(t, graphTopic, gtPartitions)
	createTopic(t, edgeTopic, etPartitions)
	graph = make([]*gateway, gtGateways)
	for i := range graph {
		graph[i] = startGraphGateway(t, broker, graphTopic, prefix+"-graph",
			map[string]string{"KAFKA_EDGE_TOPIC": edgeTopic}, configPath("graph-gateway-edges.yaml"))
	}
	edges = make([]*gateway, etGateways)
	for i := range edges {
		edges[i] = startServing(t, "edge-gateway.yaml", map[string]string{
			"KAFKA_BROKERS": broker, "KAFKA_EDGE_TOPIC": edgeTopic, "KAFKA_EDGE_GROUP": prefix + "-edges",
		})
	}
	requireAllAssigned(t, graphTopic, graph)
	requireAllAssigned(t, edgeTopic, edges)
	ag := startAgent(t, broker, spansTopic, agentGraphOverlay(t, graphTopic, gtPartitions))
	return graph, edges, newESOTLPSender(t, ag.otlpHTTP)
}

// requireGraphGatewaysEmpty checks that every graph gateway paired calls (the trace-ID buckets
// spread them) and holds no edge once the calls stop: with delta temporality a series idle for
// an interval is removed.
func requireGraphGatewaysEmpty(t *testing.T, graph []*gateway) {
	t.Helper()
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
}

// logTierTelemetry logs what the gateways count of drops, refusals, failures and expiries, so a
// shortfall says where it was lost.
func logTierTelemetry(t *testing.T, gateways ...[]*gateway) {
	t.Helper()
	for _, tier := range gateways {
		for i, g := range tier {
			fams, err := scrape(g.telemetryURL)
			if err != nil {
				t.Logf("gateway %d: %v", i, err)
				continue
			}
			for name, f := range fams {
				if !strings.Contains(name, "fail") && !strings.Contains(name, "refused") && !strings.Contains(name, "dropped") &&
					!strings.Contains(name, "adjusted") && !strings.Contains(name, "expired") && !strings.Contains(name, "tracegraph") &&
					!strings.Contains(name, "accepted") && !strings.Contains(name, "sent") {
					continue
				}
				for _, m := range f.GetMetric() {
					v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
					if v == 0 {
						continue
					}
					var lbls []string
					for _, lp := range m.GetLabel() {
						if lp.GetName() == "reason" || lp.GetName() == "outcome" || strings.HasSuffix(lp.GetName(), "_type") || lp.GetName() == "otelcol_component_id" {
							lbls = append(lbls, lp.GetName()+"="+lp.GetValue())
						}
					}
					t.Logf("%s %d: %s%v %g", g.cmd.Args[len(g.cmd.Args)-1], i, name, lbls, v)
				}
			}
		}
	}
}

func mustScrapeEdges(t *testing.T, g *gateway) edgeCounts {
	t.Helper()
	c, err := scrapeEdges([]*gateway{g})
	require.NoError(t, err)
	return c
}
