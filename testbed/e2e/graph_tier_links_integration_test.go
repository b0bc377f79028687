//go:build integration

package e2e

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The messages of TestGraphTierPairsLinkedMessagesAcrossAgents: lmMessages PRODUCER spans of lm-orders, each
// in a trace of its own; lm-billing reads every message (a CONSUMER span in a trace of its own,
// one link), failing every lmBillingFailEvery-th; lm-audit reads them lmAuditBatch at a time (one
// CONSUMER span, in a trace of its own, linking to lmAuditBatch producers of as many traces),
// failing every lmAuditFailEvery-th batch.
const (
	lmMessages         = 600
	lmPerRequest       = 100
	lmAuditBatch       = 3
	lmBillingFailEvery = 7
	lmAuditFailEvery   = 5
	lmPartitions       = 8
	lmGateways         = 2
)

// lmTrace returns a well-spread trace ID of kind (producer, billing or audit) for message or batch i.
func lmTrace(run, kind byte, i int) pcommon.TraceID {
	var trace pcommon.TraceID
	trace[0], trace[1], trace[2] = 0x4c, run, kind
	binary.BigEndian.PutUint64(trace[8:], splitmix64(uint64(i)|uint64(kind)<<40|uint64(run)<<48))
	return trace
}

func lmSpanID(kind byte, i int) pcommon.SpanID {
	return pcommon.SpanID{0x4c, kind, 0, 0, 0, byte(i >> 16), byte(i >> 8), byte(i)}
}

// lmProducers returns the PRODUCER spans of messages [first, first+n).
func lmProducers(run byte, first, n int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "lm-orders")
	ss := rs.ScopeSpans().AppendEmpty()
	now := time.Now()
	for i := first; i < first+n; i++ {
		s := sgSpan(ss, ptrace.SpanKindProducer, lmTrace(run, 'p', i), lmSpanID('p', i), pcommon.SpanID{}, now.Add(-time.Second), 2*time.Millisecond, false)
		s.Attributes().PutStr("messaging.system", "kafka")
		s.Attributes().PutStr("messaging.destination.name", "orders")
	}
	return td
}

// lmConsumers returns the CONSUMER spans reading messages [first, first+n): lm-billing's, and
// lm-audit's of the batches that start in the range (first is a multiple of lmAuditBatch).
func lmConsumers(run byte, first, n int) ptrace.Traces {
	td := ptrace.NewTraces()
	scope := func(service string) ptrace.ScopeSpans {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", service)
		return rs.ScopeSpans().AppendEmpty()
	}
	billing, audit := scope("lm-billing"), scope("lm-audit")
	now := time.Now()
	link := func(s ptrace.Span, i int) {
		l := s.Links().AppendEmpty()
		l.SetTraceID(lmTrace(run, 'p', i))
		l.SetSpanID(lmSpanID('p', i))
	}
	for i := first; i < first+n; i++ {
		s := sgSpan(billing, ptrace.SpanKindConsumer, lmTrace(run, 'b', i), lmSpanID('b', i), pcommon.SpanID{}, now, 5*time.Millisecond, i%lmBillingFailEvery == 0)
		link(s, i)
		if i%lmAuditBatch == 0 {
			batch := i / lmAuditBatch
			a := sgSpan(audit, ptrace.SpanKindConsumer, lmTrace(run, 'a', batch), lmSpanID('a', batch), pcommon.SpanID{}, now, 8*time.Millisecond, batch%lmAuditFailEvery == 0)
			for k := i; k < i+lmAuditBatch && k < lmMessages; k++ {
				link(a, k)
			}
		}
	}
	return td
}

// lmWant returns the messaging edges the messages make, and their failed requests.
func lmWant() (requests, failed map[[3]string]int) {
	requests, failed = map[[3]string]int{}, map[[3]string]int{}
	billing := [3]string{"lm-orders", "lm-billing", "messaging_system"}
	audit := [3]string{"lm-orders", "lm-audit", "messaging_system"}
	for i := range lmMessages {
		requests[billing]++
		requests[audit]++
		if i%lmBillingFailEvery == 0 {
			failed[billing]++
		}
		if (i/lmAuditBatch)%lmAuditFailEvery == 0 {
			failed[audit]++
		}
	}
	return requests, failed
}

// scrapeLinkedEdges sums, over the gateways, the requests and failed requests of every edge one
// of whose sides is an lm- service, by client, server and connection_type.
func scrapeLinkedEdges(gws []*gateway) (requests, failed map[[3]string]int, err error) {
	requests, failed = map[[3]string]int{}, map[[3]string]int{}
	for _, g := range gws {
		fams, err := scrape(g.metricsURL)
		if err != nil {
			return nil, nil, err
		}
		for family, into := range map[string]map[[3]string]int{
			"traces_service_graph_request_total":        requests,
			"traces_service_graph_request_failed_total": failed,
		} {
			for _, m := range fams[family].GetMetric() {
				l := map[string]string{}
				for _, lp := range m.GetLabel() {
					l[lp.GetName()] = lp.GetValue()
				}
				if !strings.HasPrefix(l["client"], "lm-") && !strings.HasPrefix(l["server"], "lm-") {
					continue
				}
				into[[3]string{l["client"], l["server"], l["connection_type"]}] += int(m.GetCounter().GetValue())
			}
		}
	}
	return requests, failed, nil
}

// TestGraphTierPairsLinkedMessagesAcrossAgents sends messages whose producer and consumers are in different
// traces, joined by span links, the producers' spans through one agent and the consumers'
// through another (configs/agent.yaml with configs/agent-graph.yaml), half of the consumers
// before their producers, into two graph gateways (configs/graph-gateway.yaml) in one consumer
// group:
//   - as shipped (kafkaaffinity follow_links, tracegraph links.enabled), every link reaches the
//     gateway that holds its producer: the messaging_system edges, summed over the gateways,
//     are exactly the messages read, failures included, and there is no other edge;
//   - with both off, the consumers go by their own trace IDs and pair through their parents
//     only: every span reaches a gateway and is counted once, unpaired, and no messaging edge
//     is counted.
func TestGraphTierPairsLinkedMessagesAcrossAgents(t *testing.T) {
	broker := startKafka(t)
	for _, tc := range []struct {
		name  string
		links bool
	}{
		{"links", true},
		{"no links", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			suffix := "links"
			var run byte = 1
			env := map[string]string{}
			var gatewayOverlays []string
			var agentOverlays []string
			if !tc.links {
				suffix, run = "nolinks", 2
				// Halves that never pair leave after the ttl; a short one keeps the wait short.
				env["TRACEGRAPH_STORE_TTL"] = "3s"
				gatewayOverlays = overlayFiles(t, "connectors:\n  tracegraph:\n    links:\n      enabled: false\n")
				agentOverlays = append(agentOverlays, "exporters:\n  kafkaaffinity/graph:\n    follow_links: false\n")
			}
			spansTopic, graphTopic := "lm-spans-"+suffix, "lm-graph-"+suffix
			createTopic(t, spansTopic, lmPartitions)
			createTopic(t, graphTopic, lmPartitions)
			gws := make([]*gateway, lmGateways)
			for i := range gws {
				gws[i] = startGraphGateway(t, broker, graphTopic, "lm-"+suffix, env, gatewayOverlays...)
			}
			requireAllAssigned(t, graphTopic, gws)
			overlays := append([]string{agentGraphOverlay(t, graphTopic, lmPartitions)}, agentOverlays...)
			producerAgent := newESOTLPSender(t, startAgent(t, broker, spansTopic, overlays...).otlpHTTP)
			consumerAgent := newESOTLPSender(t, startAgent(t, broker, spansTopic, overlays...).otlpHTTP)

			// The consumers of the first half of the messages come before their producers.
			half := lmMessages / 2
			for first := 0; first < half; first += lmPerRequest {
				require.NoError(t, consumerAgent.send(lmConsumers(run, first, min(lmPerRequest, half-first))))
			}
			for first := 0; first < lmMessages; first += lmPerRequest {
				require.NoError(t, producerAgent.send(lmProducers(run, first, lmPerRequest)))
			}
			for first := half; first < lmMessages; first += lmPerRequest {
				require.NoError(t, consumerAgent.send(lmConsumers(run, first, min(lmPerRequest, lmMessages-first))))
			}
			want, wantFailed := lmWant()

			if tc.links {
				var requests, failed map[[3]string]int
				ok := waitFor(90*time.Second, func() bool {
					var err error
					requests, failed, err = scrapeLinkedEdges(gws)
					return err == nil && sumEdges(requests) >= 2*lmMessages
				})
				require.True(t, ok, "paired messages: %v, want %v", requests, want)
				// One more flush: nothing beyond the messages comes.
				time.Sleep(2 * time.Second)
				requests, failed, err := scrapeLinkedEdges(gws)
				require.NoError(t, err)
				require.Equal(t, want, requests, "requests per edge, summed over the gateways")
				require.Equal(t, wantFailed, failed, "failed requests per edge")
				for i, g := range gws {
					r, _, err := scrapeLinkedEdges([]*gateway{g})
					require.NoError(t, err)
					t.Logf("graph gateway %d: %v", i, r)
					require.Positive(t, sumEdges(r), "graph gateway %d paired no message: the buckets did not spread them", i)
				}
				return
			}
			// Without links: every span on the graph topic reaches a gateway (producers, and
			// each consumer span once), the halves expire unpaired, and no messaging edge is
			// counted between the services.
			spans := float64(2*lmMessages + (lmMessages+lmAuditBatch-1)/lmAuditBatch)
			ok := waitFor(90*time.Second, func() bool {
				accepted := 0.0
				for _, g := range gws {
					accepted += max(0, telemetrySum(t, g.telemetryURL, "otelcol_receiver_accepted_spans_total", map[string]string{"receiver": "kafka"}))
				}
				return accepted >= spans
			})
			require.True(t, ok, "the graph gateways did not receive the %v spans", spans)
			// The ttl (3 s), an expiration round (2 s) and a flush (1 s).
			time.Sleep(7 * time.Second)
			requests, _, err := scrapeLinkedEdges(gws)
			require.NoError(t, err)
			messaging := 0
			for e, n := range requests {
				if e[2] == "messaging_system" {
					messaging += n
				}
			}
			t.Logf("without links: edges %v", requests)
			require.Zero(t, messaging, "messaging edges counted without links")
			// Each half is counted once, unpaired: a producer to the virtual node "unknown"
			// when it expires, a consumer (a root span) as called by "user".
			require.Equal(t, map[[3]string]int{
				{"lm-orders", "unknown", "virtual_node"}: lmMessages,
				{"user", "lm-billing", "virtual_node"}:   lmMessages,
				{"user", "lm-audit", "virtual_node"}:     (lmMessages + lmAuditBatch - 1) / lmAuditBatch,
			}, requests, "the unpaired halves, each once")
		})
	}
}

func sumEdges(m map[[3]string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}
