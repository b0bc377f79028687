//go:build integration

package e2e

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The calls of TestGraphTierPairsAcrossServiceKeys: services gt00 … gt19, call i from service
// i mod 20 to service (7i+3) mod 20 (never itself), every 5th answered with an error.
const (
	gtServices   = 20
	gtCalls      = 2000
	gtPerRequest = 200
	gtErrorEvery = 5
	gtPartitions = 12
	gtGateways   = 3
)

func gtService(i int) string { return fmt.Sprintf("gt%02d", i) }

// gtEdge is the (client, server) pair of call i.
func gtEdge(i int) (client, server string) {
	return gtService(i % gtServices), gtService((7*i + 3) % gtServices)
}

// gtTraces returns calls [first, first+n): the client side (the caller's root SERVER span and its
// CLIENT span) and the server side (the callee's SERVER span), one ResourceSpans per span so that
// the agent's spans topic keys every span by its own service; and an INTERNAL span of the caller.
func gtTraces(run byte, first, n int) (clientSide, serverSide ptrace.Traces) {
	clientSide, serverSide = ptrace.NewTraces(), ptrace.NewTraces()
	scope := func(td ptrace.Traces, service string) ptrace.ScopeSpans {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", service)
		return rs.ScopeSpans().AppendEmpty()
	}
	now := time.Now()
	for i := first; i < first+n; i++ {
		c, s := gtEdge(i)
		var trace pcommon.TraceID
		trace[0], trace[1] = 0x97, run
		// Spread like random trace IDs (what the trace-ID buckets are made for).
		binary.BigEndian.PutUint64(trace[8:], splitmix64(uint64(i)+uint64(run)<<32))
		id := func(k byte) pcommon.SpanID { return pcommon.SpanID{0x97, k, byte(i >> 8), byte(i)} }
		sgSpan(scope(clientSide, c), ptrace.SpanKindServer, trace, id(1), pcommon.SpanID{}, now, 30*time.Millisecond, false)
		sgSpan(scope(clientSide, c), ptrace.SpanKindClient, trace, id(2), id(1), now, 20*time.Millisecond, false)
		// Never part of an edge: the agent keeps it off the graph topic.
		sgSpan(scope(clientSide, c), ptrace.SpanKindInternal, trace, id(4), id(1), now, time.Millisecond, false)
		sgSpan(scope(serverSide, s), ptrace.SpanKindServer, trace, id(3), id(2), now, 10*time.Millisecond, i%gtErrorEvery == 0)
	}
	return clientSide, serverSide
}

// splitmix64 mixes x into a well-spread 64-bit value (Steele, Lea and Flood's SplitMix64 finalizer).
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// sendGTCalls sends the gtCalls calls through the agent's OTLP sender, gtPerRequest a request,
// the callee's spans one request before the caller's, and returns the requests and the failed
// requests sent per edge.
func sendGTCalls(t *testing.T, sender *esOTLPSender, run byte) (want, wantFailed map[[2]string]int) {
	t.Helper()
	want, wantFailed = map[[2]string]int{}, map[[2]string]int{}
	for first := 0; first < gtCalls; first += gtPerRequest {
		clientSide, serverSide := gtTraces(run, first, gtPerRequest)
		require.NoError(t, sender.send(serverSide))
		require.NoError(t, sender.send(clientSide))
		for i := first; i < first+gtPerRequest; i++ {
			c, s := gtEdge(i)
			want[[2]string{c, s}]++
			if i%gtErrorEvery == 0 {
				wantFailed[[2]string{c, s}]++
			}
		}
	}
	return want, wantFailed
}

// agentGraphOverlay is configs/agent-graph.yaml writing to topic with buckets trace-ID buckets.
func agentGraphOverlay(t *testing.T, topic string, buckets int) string {
	t.Helper()
	b, err := os.ReadFile(configPath("agent-graph.yaml"))
	require.NoError(t, err)
	s := strings.ReplaceAll(string(b), "${env:KAFKA_GRAPH_TOPIC:-otlp_graph_spans}", topic)
	return strings.ReplaceAll(s, "${env:KAFKA_GRAPH_BUCKETS:-16}", strconv.Itoa(buckets))
}

// startGraphGateway runs configs/graph-gateway.yaml reading topic in consumer group group; env
// adds to the environment and overlays are merged over the config.
func startGraphGateway(t *testing.T, broker, topic, group string, env map[string]string, overlays ...string) *gateway {
	t.Helper()
	all := map[string]string{
		"KAFKA_BROKERS":          broker,
		"KAFKA_GRAPH_TOPIC":      topic,
		"KAFKA_GRAPH_GROUP":      group,
		"METRICS_FLUSH_INTERVAL": "1s",
	}
	for k, v := range env {
		all[k] = v
	}
	return startServing(t, "graph-gateway.yaml", all, overlays...)
}

// startServing runs configs/<config> on free metrics, health and telemetry endpoints.
func startServing(t *testing.T, config string, env map[string]string, overlays ...string) *gateway {
	t.Helper()
	metrics, telemetry := freeAddr(t), freeAddr(t)
	env["METRICS_ENDPOINT"] = metrics
	env["HEALTH_ENDPOINT"] = freeAddr(t)
	env["TELEMETRY_PORT"] = portOf(telemetry)
	return &gateway{
		Collector:    StartCollector(t, configPath(config), env, overlays...),
		metricsURL:   "http://" + metrics + "/metrics",
		telemetryURL: "http://" + telemetry + "/metrics",
	}
}

// TestGraphTierPairsAcrossServiceKeys sends 2000 calls between 20 services through
// configs/agent.yaml with the configs/agent-graph.yaml overlay, the callee's spans in one request
// and the caller's in the next, and reads the service graph from three graph gateways
// (configs/graph-gateway.yaml) in one consumer group on 12 partitions:
//   - on the graph topic, keyed by trace ID, both spans of every call reach the same gateway, so
//     the requests and failures per edge, summed over the gateways, are exactly the calls sent;
//   - on the spans topic, keyed by service, the two spans of a call land on the gateways of their
//     two services, so a large share of the calls is never paired: why the tier has its own topic.
func TestGraphTierPairsAcrossServiceKeys(t *testing.T) {
	broker := startKafka(t)
	for _, tc := range []struct {
		name      string
		byTraceID bool
	}{
		{"graph topic by trace ID", true},
		{"spans topic by service", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			suffix := "service"
			if tc.byTraceID {
				suffix = "trace"
			}
			spansTopic, graphTopic := "gt-spans-"+suffix, "gt-graph-"+suffix
			createTopic(t, spansTopic, gtPartitions)
			createTopic(t, graphTopic, gtPartitions)
			read := spansTopic
			if tc.byTraceID {
				read = graphTopic
			}
			gws := make([]*gateway, gtGateways)
			for i := range gws {
				gws[i] = startGraphGateway(t, broker, read, "gt-"+suffix, nil)
			}
			requireAllAssigned(t, read, gws)
			ag := startAgent(t, broker, spansTopic, agentGraphOverlay(t, graphTopic, gtPartitions))
			sender := newESOTLPSender(t, ag.otlpHTTP)

			var run byte = 1
			if tc.byTraceID {
				run = 2
			}
			want, wantFailed := sendGTCalls(t, sender, run)

			// Requests between the services, summed over the gateways, per edge.
			edges := func() (requests, failed map[[2]string]int, err error) {
				c, err := scrapeEdges(gws)
				return c.requests, c.failed, err
			}
			if tc.byTraceID {
				paired := 0
				ok := waitFor(2*time.Minute, func() bool {
					requests, _, err := edges()
					paired = sum(requests)
					return err == nil && paired >= gtCalls
				})
				require.True(t, ok, "paired requests: %d of %d", paired, gtCalls)
				// One more flush: nothing beyond the calls sent comes.
				time.Sleep(2 * time.Second)
				requests, failed, err := edges()
				require.NoError(t, err)
				require.Equal(t, want, requests, "requests per edge, summed over the gateways")
				require.Equal(t, wantFailed, failed, "failed requests per edge")
				t.Logf("%d calls on %d edges paired exactly over %d graph gateways", sum(requests), len(requests), len(gws))
				// Each gateway holds the edges of the traces it reads: an edge's calls are spread
				// over the gateways trace by trace, so its series exist on each, and only the sum
				// is the edge (what the dashboard shows).
				for i, g := range gws {
					fams, err := scrape(g.metricsURL)
					require.NoError(t, err)
					held := len(fams["traces_service_graph_request_total"].GetMetric())
					t.Logf("graph gateway %d: %d request_total series", i, held)
					require.Positive(t, held, "graph gateway %d paired no call: the trace-ID buckets did not spread the calls", i)
				}

				// The agent wrote every span to the spans topic and only the edge spans (not the
				// INTERNAL ones) to the graph topic.
				own := Scrape(t, ag.telemetryURL)
				spans := "otelcol_exporter_kafkaaffinity_spans_total"
				byService, _ := SumSeries(own, spans, map[string]string{"class": "normal"})
				byTrace, _ := SumSeries(own, spans, map[string]string{"class": "trace_id"})
				require.Equal(t, float64(4*gtCalls), byService, "spans on the spans topic")
				require.Equal(t, float64(3*gtCalls), byTrace, "spans on the graph topic")
				return
			}
			// By service: wait until the unpaired halves expired (store ttl 10 s) and the gateways
			// flushed, then count what was paired.
			time.Sleep(15 * time.Second)
			requests, _, err := edges()
			require.NoError(t, err)
			t.Logf("spans topic keyed by service: %d of %d calls paired", sum(requests), gtCalls)
			require.Less(t, sum(requests), gtCalls*9/10, "calls paired when the two spans go to the gateways of their services")
		})
	}
}

// edgeCounts is what gateways serve of the edges between the gt services, summed over the
// gateways: requests, failed requests and the server latency histograms' counts per edge, and
// how many gateways hold a request_total series of each edge.
type edgeCounts struct {
	requests, failed, latencyCount, holders map[[2]string]int
}

func scrapeEdges(gws []*gateway) (edgeCounts, error) {
	c := edgeCounts{requests: map[[2]string]int{}, failed: map[[2]string]int{}, latencyCount: map[[2]string]int{}, holders: map[[2]string]int{}}
	for _, g := range gws {
		fams, err := scrape(g.metricsURL)
		if err != nil {
			return c, err
		}
		held := map[[2]string]bool{}
		for family, into := range map[string]map[[2]string]int{
			"traces_service_graph_request_total":          c.requests,
			"traces_service_graph_request_failed_total":   c.failed,
			"traces_service_graph_request_server_seconds": c.latencyCount,
		} {
			for _, m := range fams[family].GetMetric() {
				l := map[string]string{}
				for _, lp := range m.GetLabel() {
					l[lp.GetName()] = lp.GetValue()
				}
				if !strings.HasPrefix(l["client"], "gt") || !strings.HasPrefix(l["server"], "gt") {
					continue
				}
				edge := [2]string{l["client"], l["server"]}
				switch {
				case m.GetHistogram() != nil:
					into[edge] += int(m.GetHistogram().GetSampleCount())
				default:
					into[edge] += int(m.GetCounter().GetValue())
				}
				if family == "traces_service_graph_request_total" {
					held[edge] = true
				}
			}
		}
		for e := range held {
			c.holders[e]++
		}
	}
	return c, nil
}

func sum(m map[[2]string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}
