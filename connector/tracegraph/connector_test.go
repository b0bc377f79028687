package tracegraph

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracegraph/internal/metadata"
)

// startTracegraph starts a connector with the default configuration changed by mod.
func startTracegraph(t *testing.T, mod func(*Config)) (*connectorImp, *consumertest.MetricsSink) {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	if mod != nil {
		mod(cfg)
	}
	require.NoError(t, cfg.Validate())
	sink := &consumertest.MetricsSink{}
	c, err := newConnector(connectortest.NewNopSettings(metadata.Type).TelemetrySettings, cfg, sink, clockwork.NewRealClock())
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { _ = c.Shutdown(context.Background()) })
	return c, sink
}

// oneSpan returns traces holding one span of service svc.
func oneSpan(svc string, kind ptrace.SpanKind, trace byte, id, parent byte, mod func(ptrace.Span)) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", svc)
	s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetKind(kind)
	s.SetTraceID(pcommon.TraceID{trace})
	s.SetSpanID(pcommon.SpanID{id})
	if parent != 0 {
		s.SetParentSpanID(pcommon.SpanID{parent})
	}
	s.SetStartTimestamp(1_000_000_000)
	s.SetEndTimestamp(1_100_000_000)
	if mod != nil {
		mod(s)
	}
	return td
}

// requestTotals returns the request_total points of md by "client>server/connection_type".
func requestTotals(md pmetric.Metrics) map[string]int64 {
	out := map[string]int64{}
	for k, p := range flatten(md) {
		if len(k) > len(metricTotal) && k[:len(metricTotal)+1] == metricTotal+"{" {
			out[k[len(metricTotal):]] = p.Int
		}
	}
	return out
}

func lastFlush(t *testing.T, sink *consumertest.MetricsSink) pmetric.Metrics {
	t.Helper()
	all := sink.AllMetrics()
	require.NotEmpty(t, all)
	return all[len(all)-1]
}

func consume(t *testing.T, c *connectorImp, tds ...ptrace.Traces) {
	t.Helper()
	for _, td := range tds {
		require.NoError(t, c.ConsumeTraces(context.Background(), td))
	}
}

func TestFactoryLifecycle(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	sink := &consumertest.MetricsSink{}
	conn, err := f.CreateTracesToMetrics(context.Background(), connectortest.NewNopSettings(metadata.Type), f.CreateDefaultConfig(), sink)
	require.NoError(t, err)
	require.NoError(t, conn.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, conn.ConsumeTraces(context.Background(), oneSpan("a", ptrace.SpanKindClient, 1, 1, 0, nil)))
	require.NoError(t, conn.ConsumeTraces(context.Background(), oneSpan("b", ptrace.SpanKindServer, 1, 2, 1, nil)))
	// Shutdown flushes what was consumed, then stops every goroutine (goleak checks).
	require.NoError(t, conn.Shutdown(context.Background()))
	require.Equal(t, map[string]int64{"{client=a,connection_type=,failed=false,server=b}": 1}, requestTotals(lastFlush(t, sink)))
	require.NoError(t, conn.Shutdown(context.Background()), "a second Shutdown is harmless")
	err = conn.ConsumeTraces(context.Background(), oneSpan("a", ptrace.SpanKindClient, 1, 1, 0, nil))
	require.ErrorIs(t, err, errShutdown)
	require.EqualValues(t, 1, conn.(*connectorImp).tel.droppedSpans.Load(), "a refused span is counted")
}

// An edge is counted once when its second half arrives, whether that is in the same flush
// interval or flushes later, and whichever half comes first.
func TestPairCountedOnceAcrossFlushes(t *testing.T) {
	for _, serverFirst := range []bool{false, true} {
		c, sink := startTracegraph(t, func(cfg *Config) { cfg.MetricsFlushInterval = ptr(time.Duration(0)) })
		client := oneSpan("a", ptrace.SpanKindClient, 7, 1, 0, nil)
		server := oneSpan("b", ptrace.SpanKindServer, 7, 2, 1, nil)
		first, second := client, server
		if serverFirst {
			first, second = server, client
		}
		consume(t, c, first)
		// A flush after each drained batch: the half alone makes no series (nothing is sent).
		require.Eventually(t, func() bool { return c.tel.receivedSpans.Load() == 1 }, 5*time.Second, time.Millisecond)
		consume(t, c, second)
		require.Eventually(t, func() bool { return c.tel.flushes.Load() >= 1 }, 5*time.Second, time.Millisecond)
		consume(t, c, oneSpan("x", ptrace.SpanKindClient, 8, 1, 0, nil), oneSpan("y", ptrace.SpanKindServer, 8, 2, 1, nil))
		require.NoError(t, c.Shutdown(context.Background()))
		for i, md := range sink.AllMetrics() {
			require.EqualValues(t, 1, requestTotals(md)["{client=a,connection_type=,failed=false,server=b}"], "flush %d", i)
		}
		require.EqualValues(t, 1, requestTotals(lastFlush(t, sink))["{client=x,connection_type=,failed=false,server=y}"])
		require.Zero(t, c.tel.expiredEdges.Load())
	}
}

// A full store expires its oldest half to make room (servicegraph drops the new one): every
// client span is still counted, as a request to its virtual node.
func TestFullStoreEvictsOldest(t *testing.T) {
	c, sink := startTracegraph(t, func(cfg *Config) { cfg.Store.MaxItems = 2 })
	for i := byte(1); i <= 5; i++ {
		consume(t, c, oneSpan("a", ptrace.SpanKindClient, i, 1, 0, func(s ptrace.Span) {
			s.Attributes().PutStr("peer.service", "stripe")
		}))
	}
	require.NoError(t, c.Shutdown(context.Background()))
	require.EqualValues(t, 3, c.tel.evictedEdges.Load(), "halves evicted for room")
	require.EqualValues(t, 5, c.tel.expiredEdges.Load(), "3 evicted, 2 expired at shutdown")
	require.Equal(t, map[string]int64{"{client=a,connection_type=virtual_node,failed=false,server=stripe}": 5}, requestTotals(lastFlush(t, sink)))
}

// A sampled span stands for 1/p calls; an edge counts the larger adjusted count of its halves.
func TestSamplingWeights(t *testing.T) {
	for _, tc := range []struct {
		weighted bool
		want     int64
	}{{true, 4}, {false, 1}} {
		c, sink := startTracegraph(t, func(cfg *Config) { cfg.Sampling.Weighted = tc.weighted })
		consume(t, c,
			oneSpan("a", ptrace.SpanKindClient, 1, 1, 0, func(s ptrace.Span) { s.TraceState().FromRaw("ot=th:8") }), // p = 1/2
			oneSpan("b", ptrace.SpanKindServer, 1, 2, 1, func(s ptrace.Span) { s.TraceState().FromRaw("ot=th:c") })) // p = 1/4
		require.NoError(t, c.Shutdown(context.Background()))
		md := lastFlush(t, sink)
		require.Equal(t, map[string]int64{"{client=a,connection_type=,failed=false,server=b}": tc.want}, requestTotals(md))
		for k, p := range flatten(md) {
			if p.Bounds != nil {
				require.EqualValues(t, tc.want, p.Count, k)
				require.InDelta(t, 0.1*float64(tc.want), p.Sum, 1e-12, k)
			}
		}
	}
}

// The connection type does not depend on which half came first (servicegraph takes the last
// half's): a PRODUCER span makes a messaging edge with a SERVER span in either order.
func TestConnectionTypeIndependentOfOrder(t *testing.T) {
	for _, producerFirst := range []bool{true, false} {
		c, sink := startTracegraph(t, nil)
		p := oneSpan("a", ptrace.SpanKindProducer, 1, 1, 0, nil)
		s := oneSpan("b", ptrace.SpanKindServer, 1, 2, 1, nil)
		if producerFirst {
			consume(t, c, p, s)
		} else {
			consume(t, c, s, p)
		}
		require.NoError(t, c.Shutdown(context.Background()))
		require.Equal(t, map[string]int64{"{client=a,connection_type=messaging_system,failed=false,server=b}": 1}, requestTotals(lastFlush(t, sink)))
	}
}

// Idle series are removed after series_expiration, and the strings only they used with them.
func TestIdleSeriesRemoved(t *testing.T) {
	c, sink := startTracegraph(t, func(cfg *Config) {
		cfg.SeriesExpiration = 50 * time.Millisecond
		cfg.CacheLoop = 10 * time.Millisecond
	})
	consume(t, c, oneSpan("old", ptrace.SpanKindClient, 1, 1, 0, nil), oneSpan("b", ptrace.SpanKindServer, 1, 2, 1, nil))
	require.Eventually(t, func() bool { return c.tel.receivedSpans.Load() == 2 }, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return c.tel.series.Load() == 0 }, 5*time.Second, time.Millisecond)
	consume(t, c, oneSpan("new", ptrace.SpanKindClient, 2, 1, 0, nil), oneSpan("b", ptrace.SpanKindServer, 2, 2, 1, nil))
	require.NoError(t, c.Shutdown(context.Background()))
	require.Equal(t, map[string]int64{"{client=new,connection_type=,failed=false,server=b}": 1}, requestTotals(lastFlush(t, sink)))
	_, kept := c.agg.ids.idOf["old"]
	require.False(t, kept, "the expired series' service name was swept")
}

// Producers on several goroutines, through a ring small enough to fill, give the same totals as
// one: the halves of a call meet whichever goroutine brought them (run under -race too).
func TestConcurrentProducers(t *testing.T) {
	input := newCallGraph(11).traces(300)
	mod := func(cfg *Config) {
		cfg.Dimensions = []string{"http.method"}
		cfg.MetricsFlushInterval = ptr(5 * time.Millisecond)
		cfg.RingSize = 8 // full rings: producers wait for room
	}
	serial, serialSink := startTracegraph(t, mod)
	consume(t, serial, input...)
	require.NoError(t, serial.Shutdown(context.Background()))

	c, sink := startTracegraph(t, mod)
	const producers = 4
	done := make(chan struct{})
	for p := range producers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := p; i < len(input); i += producers {
				assert.NoError(t, c.ConsumeTraces(context.Background(), input[i]))
			}
		}()
	}
	for range producers {
		<-done
	}
	require.NoError(t, c.Shutdown(context.Background()))
	requireSamePoints(t, lastFlush(t, serialSink), lastFlush(t, sink))
}

// Spans of a resource without service.name are counted, not silently skipped; a server span that
// ends before it starts pairs like any other, its latency counted 0 (not servicegraph's wrapped
// 584 years), and is counted too.
func TestBadSpansAreCounted(t *testing.T) {
	c, sink := startTracegraph(t, nil)
	anonymous := oneSpan("x", ptrace.SpanKindClient, 9, 1, 0, nil)
	anonymous.ResourceSpans().At(0).Resource().Attributes().Remove("service.name")
	client := oneSpan("a", ptrace.SpanKindClient, 7, 1, 0, nil)
	server := oneSpan("b", ptrace.SpanKindServer, 7, 2, 1, func(s ptrace.Span) {
		s.SetEndTimestamp(s.StartTimestamp() - 1)
	})
	consume(t, c, anonymous, client, server)
	require.NoError(t, c.Shutdown(context.Background()))
	require.EqualValues(t, 1, c.tel.noService.Load(), "spans without service.name")
	require.EqualValues(t, 1, c.tel.backwards.Load(), "spans ending before they start")
	md := lastFlush(t, sink)
	require.EqualValues(t, 1, requestTotals(md)["{client=a,connection_type=,failed=false,server=b}"])
	latency, ok := flatten(md)[metricServer+"{client=a,connection_type=,failed=false,server=b}"]
	require.True(t, ok, "the edge's server latency histogram")
	require.EqualValues(t, 1, latency.Count)
	require.Zero(t, latency.Sum, "the backwards span's latency")
}

// heldSink holds its first ConsumeMetrics call until release is closed.
type heldSink struct {
	consumertest.MetricsSink
	entered, release chan struct{}
	once             sync.Once
}

func (s *heldSink) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	first := false
	s.once.Do(func() { first = true })
	if first {
		close(s.entered)
		<-s.release
	}
	return s.MetricsSink.ConsumeMetrics(ctx, md)
}

// A flush tick that finds the flusher still sending the previous flush is postponed, counted in
// flushes_skipped: the interval goes on until the flusher hands its snapshot back, then it is
// flushed without waiting for the next tick, and with delta temporality each call is sent once.
func TestPostponedFlush(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.AggregationTemporality = temporalityDelta
	clock := clockwork.NewFakeClock()
	sink := &heldSink{entered: make(chan struct{}), release: make(chan struct{})}
	c, err := newConnector(connectortest.NewNopSettings(metadata.Type).TelemetrySettings, cfg, sink, clock)
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { _ = c.Shutdown(context.Background()) })
	var released sync.Once
	release := func() { released.Do(func() { close(sink.release) }) }
	t.Cleanup(release) // before Shutdown, whose final flush would wait for the held one
	call := func(trace byte) {
		consume(t, c, oneSpan("a", ptrace.SpanKindClient, trace, 1, 0, nil), oneSpan("b", ptrace.SpanKindServer, trace, 2, 1, nil))
		c.settle()
	}
	tick := func() {
		require.NoError(t, clock.BlockUntilContext(context.Background(), 3)) // flush, expire, clean
		clock.Advance(defaultFlushInterval)
	}
	call(1)
	tick()
	<-sink.entered // the first flush is being sent, and held there
	call(2)
	tick()
	require.Eventually(t, func() bool { return c.tel.flushesSkipped.Load() == 1 }, 5*time.Second, time.Millisecond)
	require.Empty(t, sink.AllMetrics())
	release()
	require.Eventually(t, func() bool { return c.tel.flushes.Load() == 2 }, 5*time.Second, time.Millisecond)
	const ab = "{client=a,connection_type=,failed=false,server=b}"
	for i, md := range sink.AllMetrics() {
		require.Equal(t, map[string]int64{ab: 1}, requestTotals(md), "flush %d: one call each", i)
	}
}
