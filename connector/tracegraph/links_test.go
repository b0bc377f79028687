package tracegraph

import (
	"context"
	"encoding/hex"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// msgSpan returns traces holding one span of service svc in trace {trace} with span ID {id},
// from start to end (after 1 s of unix time), linking to each (trace, span) of links.
func msgSpan(svc string, kind ptrace.SpanKind, trace, id byte, start, end time.Duration, links ...[2]byte) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", svc)
	s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetKind(kind)
	s.SetTraceID(pcommon.TraceID{trace})
	s.SetSpanID(pcommon.SpanID{id})
	s.SetStartTimestamp(pcommon.Timestamp(time.Second + start))
	s.SetEndTimestamp(pcommon.Timestamp(time.Second + end))
	for _, l := range links {
		sl := s.Links().AppendEmpty()
		sl.SetTraceID(pcommon.TraceID{l[0]})
		sl.SetSpanID(pcommon.SpanID{l[1]})
	}
	return td
}

// finish expires every waiting half of e, as Shutdown does, and returns the final flush.
func finish(e *engine) pmetric.Metrics {
	s := e.agg.Swap(e.spare, true)
	md, _ := e.build(s)
	return md
}

const ordersToBilling = "{client=orders,connection_type=messaging_system,failed=false,server=billing}"

// A CONSUMER span linking to a PRODUCER span of another trace is one messaging_system edge,
// whichever arrives first, also when the message is read by several consumers (each its own
// edge, before or after the producer); nothing else is counted: the producer kept for further
// consumers leaves the store without a virtual node edge, the root consumer spans without a
// "user" one, and neither counts as expired.
func TestLinkedConsumersPairWithTheirProducer(t *testing.T) {
	producer := msgSpan("orders", ptrace.SpanKindProducer, 0xa, 1, 0, 100*time.Millisecond)
	consumer := func(i byte) ptrace.Traces {
		return msgSpan("billing", ptrace.SpanKindConsumer, 0xb0+i, 2, 350*time.Millisecond, 400*time.Millisecond, [2]byte{0xa, 1})
	}
	for _, order := range []string{"PC", "CP", "CPC", "CCP", "PCC", "PCCC"} {
		t.Run(order, func(t *testing.T) {
			e := newEngine(newPlan(createDefaultConfig().(*Config)))
			consumers := byte(0)
			for _, c := range order {
				if c == 'P' {
					e.consume(producer)
					continue
				}
				consumers++
				e.consume(consumer(consumers))
			}
			require.Equal(t, map[string]int64{ordersToBilling: int64(consumers)}, requestTotals(finish(e)))
			require.Zero(t, e.tel.expiredEdges.Load())
			require.Zero(t, e.agg.pairs.n, "nothing left waiting")
			require.Zero(t, e.agg.pairs.linked)
		})
	}
}

// A batch receive links to several messages: one edge per link, to each producer's service; a
// link whose producer never comes expires, counted, without an edge.
func TestBatchConsumerIsOneEdgePerLink(t *testing.T) {
	e := newEngine(newPlan(createDefaultConfig().(*Config)))
	e.consume(
		msgSpan("orders", ptrace.SpanKindProducer, 0xa, 1, 0, time.Millisecond),
		msgSpan("billing", ptrace.SpanKindConsumer, 0xc, 9, 0, time.Second, [2]byte{0xa, 1}, [2]byte{0xa, 2}, [2]byte{0xd, 1}, [2]byte{0xe, 7}),
		msgSpan("orders", ptrace.SpanKindProducer, 0xa, 2, 0, time.Millisecond),
		msgSpan("refunds", ptrace.SpanKindProducer, 0xd, 1, 0, time.Millisecond),
	)
	require.Equal(t, map[string]int64{
		ordersToBilling: 2,
		"{client=refunds,connection_type=messaging_system,failed=false,server=billing}": 1,
	}, requestTotals(finish(e)))
	require.EqualValues(t, 1, e.tel.expiredEdges.Load(), "the link to a producer that never came")
}

// Without links.enabled (servicegraph v0.159.0) the same spans are two unrelated halves: the
// producer an edge to the virtual node "unknown", the root consumer one from "user", and no
// messaging_system edge is counted.
func TestLinksDisabledCountNoLinkedEdges(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Links.Enabled = false
	e := newEngine(newPlan(cfg))
	e.consume(
		msgSpan("orders", ptrace.SpanKindProducer, 0xa, 1, 0, time.Millisecond),
		msgSpan("billing", ptrace.SpanKindConsumer, 0xb, 2, 0, time.Millisecond, [2]byte{0xa, 1}),
	)
	require.Equal(t, map[string]int64{
		"{client=orders,connection_type=virtual_node,failed=false,server=unknown}": 1,
		"{client=user,connection_type=virtual_node,failed=false,server=billing}":   1,
	}, requestTotals(finish(e)))
}

// With enable_messaging_system_latency_histogram a messaging edge of which both spans came adds
// the time from the producer's end to the consumer's start, through a link or a parent; a
// consumer that started before its producer ended adds nothing to it (Tempo: the same), and
// other edges have no point. Without it there is no such metric.
func TestMessagingLatencyHistogram(t *testing.T) {
	spans := []ptrace.Traces{
		// Through a link: 100 ms → 350 ms.
		msgSpan("orders", ptrace.SpanKindProducer, 0xa, 1, 0, 100*time.Millisecond),
		msgSpan("billing", ptrace.SpanKindConsumer, 0xb, 2, 350*time.Millisecond, 400*time.Millisecond, [2]byte{0xa, 1}),
		// Through a link, the consumer's clock behind: not in the histogram.
		msgSpan("orders", ptrace.SpanKindProducer, 0xa, 3, 0, 100*time.Millisecond),
		msgSpan("billing", ptrace.SpanKindConsumer, 0xc, 2, 50*time.Millisecond, 60*time.Millisecond, [2]byte{0xa, 3}),
		// Through a parent (one trace): 1 s → 1.5 s.
		msgSpan("orders", ptrace.SpanKindProducer, 0xf, 4, 0, time.Second),
		oneSpan("billing", ptrace.SpanKindConsumer, 0xf, 5, 4, func(s ptrace.Span) {
			s.SetStartTimestamp(pcommon.Timestamp(2500 * time.Millisecond))
			s.SetEndTimestamp(pcommon.Timestamp(3 * time.Second))
		}),
		// A call: no messaging point.
		oneSpan("a", ptrace.SpanKindClient, 0x1, 1, 0, nil),
		oneSpan("b", ptrace.SpanKindServer, 0x1, 2, 1, nil),
	}
	cfg := createDefaultConfig().(*Config)
	cfg.EnableMessagingSystemLatencyHistogram = true
	got := buildWith(t, cfg, spans...)
	require.EqualValues(t, 3, got[metricTotal+ordersToBilling].Int)
	var messaging []string
	for k := range got {
		if len(k) > len(metricMessaging) && k[:len(metricMessaging)] == metricMessaging {
			messaging = append(messaging, k)
		}
	}
	require.Equal(t, []string{metricMessaging + ordersToBilling}, messaging)
	p := got[metricMessaging+ordersToBilling]
	require.EqualValues(t, 2, p.Count)
	require.InDelta(t, 0.75, p.Sum, 1e-9)
	require.Equal(t, "s", p.Unit)
	require.EqualValues(t, 3, got[metricServer+ordersToBilling].Count, "the server histogram counts every request")

	for k := range buildWith(t, createDefaultConfig().(*Config), spans...) {
		require.NotContains(t, k, metricMessaging)
	}
}

// exemplarsOf returns the exemplars of md by metric name, as "trace/span=value", sorted.
func exemplarsOf(md pmetric.Metrics) map[string][]string {
	out := map[string][]string{}
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				var xs []pmetric.ExemplarSlice
				switch m.Type() {
				case pmetric.MetricTypeHistogram:
					for d := 0; d < m.Histogram().DataPoints().Len(); d++ {
						xs = append(xs, m.Histogram().DataPoints().At(d).Exemplars())
					}
				case pmetric.MetricTypeExponentialHistogram:
					for d := 0; d < m.ExponentialHistogram().DataPoints().Len(); d++ {
						xs = append(xs, m.ExponentialHistogram().DataPoints().At(d).Exemplars())
					}
				}
				for _, x := range xs {
					for l := 0; l < x.Len(); l++ {
						ex := x.At(l)
						tid, sid := ex.TraceID(), ex.SpanID()
						out[m.Name()] = append(out[m.Name()], fmt.Sprintf("%s/%s=%g", hex.EncodeToString(tid[:1]), hex.EncodeToString(sid[:1]), ex.DoubleValue()))
					}
				}
				sort.Strings(out[m.Name()])
			}
		}
	}
	return out
}

// Exemplars name the span each histogram measured (the consumer on the server and messaging
// histograms, also when it is in another trace than the producer; the producer on the client
// one), keep the slowest max_per_data_point of an interval, and start over at each flush, in
// explicit and exponential histograms alike.
func TestExemplarsNameTheirSpans(t *testing.T) {
	for _, expo := range []bool{false, true} {
		cfg := createDefaultConfig().(*Config)
		cfg.Exemplars.Enabled = true
		cfg.Exemplars.MaxPerDataPoint = 2
		cfg.EnableMessagingSystemLatencyHistogram = true
		if expo {
			cfg.ExponentialHistogramMaxSize = 80
		}
		e := newEngine(newPlan(cfg))
		// Three messages, consumed 100, 300 and 200 ms after they were produced; each consumer
		// span takes as long.
		for i, d := range []time.Duration{100, 300, 200} {
			d *= time.Millisecond
			e.consume(
				msgSpan("orders", ptrace.SpanKindProducer, 0xa0+byte(i), 0x10+byte(i), 0, d/10),
				msgSpan("billing", ptrace.SpanKindConsumer, 0xb0+byte(i), 0x20+byte(i), d/10+d, d/10+2*d, [2]byte{0xa0 + byte(i), 0x10 + byte(i)}),
			)
		}
		md, _ := e.build(e.swap())
		assert.Equal(t, map[string][]string{
			metricServer:    {"b1/21=0.3", "b2/22=0.2"},
			metricClient:    {"a1/11=0.03", "a2/12=0.02"},
			metricMessaging: {"b1/21=0.3", "b2/22=0.2"},
		}, exemplarsOf(md), "exponential %v", expo)

		// The next interval has its own.
		e.consume(oneSpan("a", ptrace.SpanKindClient, 0x1, 0x1, 0, nil), oneSpan("b", ptrace.SpanKindServer, 0x1, 0x2, 0x1, nil))
		md, _ = e.build(e.swap())
		assert.Equal(t, map[string][]string{
			metricServer: {"01/02=0.1"},
			metricClient: {"01/01=0.1"},
		}, exemplarsOf(md), "exponential %v", expo)
	}
}

// With exemplars.slow_threshold an exemplar names only a span the Elasticsearch branch stores: one
// that failed or lasted at least the threshold. A fast successful call has none; a slow server
// span behind a fast client span is named on the server histogram only; a failed call on both.
func TestExemplarsOnlyOfStoredSpans(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Exemplars.Enabled = true
	cfg.Exemplars.SlowThreshold = 500 * time.Millisecond
	e := newEngine(newPlan(cfg))
	call := func(trace byte, client, server time.Duration, failed bool) {
		mod := func(d time.Duration) func(ptrace.Span) {
			return func(s ptrace.Span) {
				s.SetStartTimestamp(pcommon.Timestamp(time.Second))
				s.SetEndTimestamp(pcommon.Timestamp(time.Second + d))
				if failed {
					s.Status().SetCode(ptrace.StatusCodeError)
				}
			}
		}
		e.consume(oneSpan("a", ptrace.SpanKindClient, trace, 1, 0, mod(client)), oneSpan("b", ptrace.SpanKindServer, trace, 2, 1, mod(server)))
	}
	call(0x10, 100*time.Millisecond, 50*time.Millisecond, false)  // fast: none
	call(0x20, 100*time.Millisecond, 600*time.Millisecond, false) // the server span only
	call(0x30, 700*time.Millisecond, 500*time.Millisecond, false) // both (exactly the threshold is slow)
	call(0x40, 10*time.Millisecond, 5*time.Millisecond, true)     // failed: both
	md, _ := e.build(e.swap())
	assert.Equal(t, map[string][]string{
		metricServer: {"20/02=0.6", "30/02=0.5", "40/02=0.005"},
		metricClient: {"30/01=0.7", "40/01=0.01"},
	}, exemplarsOf(md))
}

// linkedRequests returns n requests of messages: in each, perRequest PRODUCER spans of "orders"
// and, each in a trace of its own, the CONSUMER spans of "billing" linking to the producers of
// the request before (so a consumer comes after its producer) and of the request after (before
// it), two per consumer span.
func linkedRequests(n, perRequest int) []ptrace.Traces {
	producer := func(r, i int) (pcommon.TraceID, pcommon.SpanID) {
		return pcommon.TraceID{0xe1, byte(r), byte(r >> 8), byte(i)}, pcommon.SpanID{0xe2, byte(r), byte(r >> 8), byte(i)}
	}
	var out []ptrace.Traces
	for r := range n {
		td := ptrace.NewTraces()
		ps := td.ResourceSpans().AppendEmpty()
		ps.Resource().Attributes().PutStr("service.name", "orders")
		cs := td.ResourceSpans().AppendEmpty()
		cs.Resource().Attributes().PutStr("service.name", "billing")
		for i := range perRequest {
			p := ps.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
			p.SetKind(ptrace.SpanKindProducer)
			tid, sid := producer(r, i)
			p.SetTraceID(tid)
			p.SetSpanID(sid)
			p.SetStartTimestamp(pcommon.Timestamp(time.Second))
			p.SetEndTimestamp(pcommon.Timestamp(time.Second + time.Duration(i)*time.Millisecond))
			c := cs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
			c.SetKind(ptrace.SpanKindConsumer)
			c.SetTraceID(pcommon.TraceID{0xc1, byte(r), byte(r >> 8), byte(i)})
			c.SetSpanID(pcommon.SpanID{0xc2, byte(r), byte(r >> 8), byte(i)})
			c.SetStartTimestamp(pcommon.Timestamp(2 * time.Second))
			c.SetEndTimestamp(pcommon.Timestamp(2*time.Second + time.Duration(i)*time.Millisecond))
			for _, other := range []int{(r + n - 1) % n, (r + 1) % n} {
				l := c.Links().AppendEmpty()
				tid, sid := producer(other, i)
				l.SetTraceID(tid)
				l.SetSpanID(sid)
			}
		}
		out = append(out, td)
	}
	return out
}

// The wire path pairs through links, measures the messaging latency and chooses exemplars as the
// pdata path does: for the same requests (messages whose consumers link to producers of the
// requests before and after, and the call graphs), the same points and the same exemplars.
func TestWireSameLinkedEdgesAndExemplars(t *testing.T) {
	cfg := func(c *Config) {
		wireConfig(c)
		c.EnableMessagingSystemLatencyHistogram = true
		c.Exemplars.Enabled = true
	}
	viaPdata, pdataSink := startTracegraph(t, cfg)
	viaWire, wireSink := startTracegraph(t, cfg)
	requests := append(linkedRequests(20, 10), newCallGraph(7).traces(50)...)
	for i, td := range requests {
		consume(t, viaPdata, td)
		consume(t, viaWire, wireEncodings[i%len(wireEncodings)](t, td))
	}
	require.NoError(t, viaPdata.Shutdown(context.Background()))
	require.NoError(t, viaWire.Shutdown(context.Background()))
	want, got := lastFlush(t, pdataSink), lastFlush(t, wireSink)
	require.EqualValues(t, 20*10*2, flatten(want)[metricTotal+"{client=orders,connection_type=messaging_system,failed=false,server=billing}"].Int, "every link paired")
	require.Equal(t, flatten(want), flatten(got))
	require.NotEmpty(t, exemplarsOf(want)[metricMessaging])
	require.Equal(t, exemplarsOf(want), exemplarsOf(got))
}

// A link without a span ID points at nothing to pair with: a CONSUMER span whose links are all
// such pairs through its parent, as without links.
func TestLinkWithoutSpanIDIsSkipped(t *testing.T) {
	e := newEngine(newPlan(createDefaultConfig().(*Config)))
	e.consume(
		oneSpan("orders", ptrace.SpanKindProducer, 0xa, 1, 0, nil),
		oneSpan("billing", ptrace.SpanKindConsumer, 0xa, 2, 1, func(s ptrace.Span) {
			s.Links().AppendEmpty().SetTraceID(pcommon.TraceID{0xb})
		}),
	)
	require.Equal(t, map[string]int64{ordersToBilling: 1}, requestTotals(finish(e)))
	require.Zero(t, e.tel.expiredEdges.Load())
}
