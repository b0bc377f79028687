package kafkaaffinity

import (
	"context"
	"testing"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracegraph"
)

// TestGraphTierPairsLinkedMessages runs the graph tier in one process: two agents, each its own
// exporter with key_by: trace_id, one sending the PRODUCER spans of 90 messages (each message
// its own trace), the other the CONSUMER spans that read them (each in a trace of its own,
// linking to one to three messages), half of them before their producers; three graph gateways
// share the partitions and each pairs what it reads in its own tracegraph connector. With
// follow_links every link is one messaging_system edge on exactly one gateway, the sum over the
// gateways exact; without it, a consumer is read where its own trace lands and most links are
// lost (each becomes a producer edge to "unknown").
func TestGraphTierPairsLinkedMessages(t *testing.T) {
	const messages, gateways = 90, 3
	producers := ptrace.NewTraces()
	rs := producers.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "orders")
	ps := rs.ScopeSpans().AppendEmpty().Spans()
	for i := range messages {
		p := ps.AppendEmpty()
		p.SetKind(ptrace.SpanKindProducer)
		p.SetTraceID(traceID(uint64(i)))
		p.SetSpanID(pcommon.SpanID{1, byte(i)})
	}
	// Consumers of messages 0..44 are sent before the producers, of 45..89 after.
	consumers := [2]ptrace.Traces{ptrace.NewTraces(), ptrace.NewTraces()}
	links := 0
	for half, td := range consumers {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "billing")
		cs := rs.ScopeSpans().AppendEmpty().Spans()
		for m := half * messages / 2; m < (half+1)*messages/2; {
			c := cs.AppendEmpty()
			c.SetKind(ptrace.SpanKindConsumer)
			c.SetTraceID(traceID(uint64(1000 + m)))
			c.SetSpanID(pcommon.SpanID{2, byte(m)})
			// A batch of one to three messages.
			for range 1 + m%3 {
				if m == (half+1)*messages/2 {
					break
				}
				l := c.Links().AppendEmpty()
				l.SetTraceID(traceID(uint64(m)))
				l.SetSpanID(pcommon.SpanID{1, byte(m)})
				links++
				m++
			}
		}
	}
	require.Equal(t, messages, links)

	edge := "{client=orders,connection_type=messaging_system,server=billing}"
	for _, follow := range []bool{true, false} {
		c := fakeCluster(t)
		agent := func() *affinityExporter {
			cfg := testConfig()
			cfg.Brokers = c.ListenAddrs()
			cfg.KeyBy = keyByTraceID
			cfg.TraceIDBuckets = testPartitions
			cfg.FollowLinks = follow
			exp, err := newExporter(cfg, exportertest.NewNopSettings(NewFactory().Type()), clockwork.NewRealClock())
			require.NoError(t, err)
			require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
			t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
			return exp
		}
		producerAgent, consumerAgent := agent(), agent()
		require.NoError(t, consumerAgent.ConsumeTraces(context.Background(), consumers[0]))
		require.NoError(t, producerAgent.ConsumeTraces(context.Background(), producers))
		require.NoError(t, consumerAgent.ConsumeTraces(context.Background(), consumers[1]))

		spans := messages + consumers[0].SpanCount() + consumers[1].SpanCount()
		if follow {
			spans = messages + countCopies(consumers[0]) + countCopies(consumers[1])
		}
		recs := readAll(t, c.ListenAddrs(), spans)

		// Gateway g reads partitions g, g+3, ...: every record of a partition, in order.
		totals := map[string]int64{}
		for g := range gateways {
			f := tracegraph.NewFactory()
			sink := &consumertest.MetricsSink{}
			conn, err := f.CreateTracesToMetrics(context.Background(), connectortest.NewNopSettings(f.Type()), f.CreateDefaultConfig(), sink)
			require.NoError(t, err)
			require.NoError(t, conn.Start(context.Background(), componenttest.NewNopHost()))
			for _, r := range recs {
				if int(r.partition)%gateways == g {
					require.NoError(t, conn.ConsumeTraces(context.Background(), r.traces))
				}
			}
			require.NoError(t, conn.Shutdown(context.Background())) // the final flush
			all := sink.AllMetrics()
			require.NotEmpty(t, all)
			for k, v := range requestTotals(all[len(all)-1]) {
				totals[k] += v
			}
		}
		if follow {
			require.Equal(t, map[string]int64{edge: messages}, totals, "every link paired once, on one gateway")
			continue
		}
		require.Less(t, totals[edge], int64(messages/2), "without follow_links most consumers miss their producers: %v", totals)
		require.Positive(t, totals["{client=orders,connection_type=virtual_node,server=unknown}"])
	}
}

// countCopies returns the records' spans the consumers of td become under follow_links: one
// per partition its links reach.
func countCopies(td ptrace.Traces) int {
	n := 0
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < spans.Len(); i++ {
		parts := map[int]bool{}
		for j := 0; j < spans.At(i).Links().Len(); j++ {
			parts[subKey(spans.At(i).Links().At(j).TraceID(), testPartitions)] = true
		}
		n += len(parts)
	}
	return n
}

// requestTotals returns the traces_service_graph_request_total points of md by
// "{client=…,connection_type=…,server=…}".
func requestTotals(md pmetric.Metrics) map[string]int64 {
	out := map[string]int64{}
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Name() != "traces_service_graph_request_total" {
					continue
				}
				for _, dp := range m.Sum().DataPoints().All() {
					a := dp.Attributes()
					get := func(k string) string { v, _ := a.Get(k); return v.AsString() }
					out["{client="+get("client")+",connection_type="+get("connection_type")+",server="+get("server")+"}"] += dp.IntValue()
				}
			}
		}
	}
	return out
}
