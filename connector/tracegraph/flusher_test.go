package tracegraph

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/otelcol-red/otelcol-red/internal/intake"
)

// engine is a connector's aggregator and flusher without the pipeline's goroutines: a test
// applies requests and swaps and builds flushes by hand, on a fake clock.
type engine struct {
	p     *plan
	clock *clockwork.FakeClock
	tel   *telemetry
	agg   *aggregator
	fl    *flusher
	hints *intake.SizeHints
	spare *snapshot
}

func newEngine(p *plan) *engine {
	e := &engine{p: p, clock: clockwork.NewFakeClock(), tel: &telemetry{}, hints: intake.NewSizeHints(numHints, maxHint), spare: new(snapshot)}
	e.agg = newAggregator(p, e.clock, e.tel, e.hints, 4)
	e.fl = newFlusher(p, &consumertest.MetricsSink{}, zap.NewNop(), e.tel)
	e.agg.Start(e.clock.Now().UnixNano())
	return e
}

// consume reduces each of tds into a batch and applies it.
func (e *engine) consume(tds ...ptrace.Traces) {
	for _, td := range tds {
		b := new(halfBatch)
		reducer{p: e.p, hints: e.hints}.reduce(b, td)
		e.agg.Apply(b, e.clock.Now().UnixNano())
	}
}

// swap ends the interval, as a flush tick does, and returns the snapshot to build.
func (e *engine) swap() *snapshot {
	s := e.agg.Swap(e.spare, false)
	e.spare = nil
	return s
}

// build builds the metrics of s, which then goes back as the spare, and returns them with the
// number of points.
func (e *engine) build(s *snapshot) (pmetric.Metrics, int) {
	md, points := e.fl.build(s)
	e.spare = s
	return md, points
}

// buildWith reduces tds into a fresh aggregator (no goroutine), and returns the metrics a flush
// builds.
func buildWith(t *testing.T, cfg *Config, tds ...ptrace.Traces) map[string]point {
	t.Helper()
	e := newEngine(newPlan(cfg))
	e.consume(tds...)
	md, _ := e.build(e.swap())
	return flatten(md)
}

// One call gives servicegraph's three metrics in seconds: request_total, request_server and
// request_client (the legacy request_duration name and milliseconds are gone with the gates
// that chose them).
func TestOutputNamesAndUnit(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	call := []ptrace.Traces{oneSpan("a", ptrace.SpanKindClient, 1, 1, 0, nil), oneSpan("b", ptrace.SpanKindServer, 1, 2, 1, nil)}
	const attrs = "{client=a,connection_type=,failed=false,server=b}"

	got := buildWith(t, cfg, call...)
	require.Equal(t, []string{metricClient + attrs, metricServer + attrs, metricTotal + attrs}, sortedKeys(got))
	for _, m := range []string{metricServer, metricClient} {
		h := got[m+attrs]
		require.Equal(t, "s", h.Unit, m)
		require.InDelta(t, 0.1, h.Sum, 1e-12, m)
		require.Equal(t, defaultBoundsSeconds, h.Bounds, m)
	}
}

// Halves expire on store_expiration_loop while the connector runs, not only at shutdown.
func TestHalvesExpireWhileRunning(t *testing.T) {
	c, sink := startTracegraph(t, func(cfg *Config) {
		cfg.Store.TTL = 30 * time.Millisecond
		cfg.StoreExpirationLoop = 10 * time.Millisecond
		cfg.MetricsFlushInterval = ptr(20 * time.Millisecond)
	})
	consume(t, c, oneSpan("a", ptrace.SpanKindClient, 1, 1, 0, func(s ptrace.Span) { s.Attributes().PutStr("db.system", "redis") }),
		oneSpan("a", ptrace.SpanKindServer, 2, 1, 0, nil)) // a root server span
	require.Eventually(t, func() bool {
		all := sink.AllMetrics()
		return len(all) > 0 && len(requestTotals(all[len(all)-1])) == 2
	}, 5*time.Second, time.Millisecond)
	require.EqualValues(t, 2, c.tel.expiredEdges.Load())
	require.Zero(t, c.tel.pending.Load())
	require.Equal(t, map[string]int64{
		"{client=a,connection_type=virtual_node,failed=false,server=redis}": 1,
		"{client=user,connection_type=virtual_node,failed=false,server=a}":  1,
	}, requestTotals(lastFlush(t, sink)))
}

// With delta temporality each flush sends the interval's counts from the previous flush's time,
// as the collector's instance; a series idle for an interval is removed, and a flush that finds
// the sender busy lets the interval go on instead of losing it.
func TestDeltaFlushes(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.AggregationTemporality = temporalityDelta
	p := newPlan(cfg)
	p.writer = "gateway-1"
	e := newEngine(p)
	var trace byte
	call := func(server string, failed bool) {
		trace++
		mod := func(s ptrace.Span) {
			if failed {
				s.Status().SetCode(ptrace.StatusCodeError)
			}
		}
		e.consume(oneSpan("a", ptrace.SpanKindClient, trace, 1, 0, nil), oneSpan(server, ptrace.SpanKindServer, trace, 2, 1, mod))
	}
	const ab, abFailed, ac = "{client=a,connection_type=,failed=false,server=b}", "{client=a,connection_type=,failed=true,server=b}", "{client=a,connection_type=,failed=false,server=c}"
	// built returns what a flush of s sends, with its interval.
	built := func(s *snapshot) (map[string]point, [2]pcommon.Timestamp) {
		t.Helper()
		md, points := e.build(s)
		if points == 0 {
			return nil, [2]pcommon.Timestamp{}
		}
		rm := md.ResourceMetrics().At(0)
		id, _ := rm.Resource().Attributes().Get("service.instance.id")
		require.Equal(t, "gateway-1", id.Str())
		m := rm.ScopeMetrics().At(0).Metrics().At(0)
		require.Equal(t, pmetric.AggregationTemporalityDelta, m.Sum().AggregationTemporality())
		dp := m.Sum().DataPoints().At(0)
		return flatten(md), [2]pcommon.Timestamp{dp.StartTimestamp(), dp.Timestamp()}
	}
	// sent flushes once a second on and returns what the flush sends.
	sent := func() (map[string]point, [2]pcommon.Timestamp) {
		t.Helper()
		e.clock.Advance(time.Second)
		return built(e.swap())
	}
	t0 := e.agg.start

	call("b", false)
	call("b", false)
	call("b", true)
	got, span := sent()
	require.Equal(t, int64(2), got[metricTotal+ab].Int)
	require.Equal(t, int64(1), got[metricTotal+abFailed].Int)
	require.Equal(t, int64(1), got[metricFailed+abFailed].Int)
	require.Equal(t, uint64(2), got[metricServer+ab].Count)
	require.Equal(t, t0, span[0])
	t1 := span[1]

	// Only the edges that counted in the interval, from the previous flush's time.
	call("b", false)
	call("c", false)
	got, span = sent()
	require.Equal(t, []string{metricClient + ab, metricClient + ac, metricServer + ab, metricServer + ac, metricTotal + ab, metricTotal + ac}, sortedKeys(got))
	require.Equal(t, int64(1), got[metricTotal+ab].Int)
	require.Equal(t, uint64(1), got[metricServer+ab].Count)
	require.Equal(t, uint64(1), got[metricServer+ab].Buckets[6], "0.1 s: the (0.05, 0.1] bucket")
	require.Equal(t, [2]pcommon.Timestamp{t1, t1 + pcommon.Timestamp(time.Second)}, span)
	require.Equal(t, 2, e.agg.series.live, "a→b failed was idle: removed")

	// The flusher is busy: the tick is postponed (the stage counts it, TestPostponedFlush) and
	// the interval goes on until the flusher hands its snapshot back.
	call("b", false)
	e.clock.Advance(time.Second)
	busy := e.swap() // handed over, not built yet
	call("b", false)
	e.clock.Advance(time.Second) // a tick while the flusher holds busy: no swap
	first, _ := built(busy)
	require.Equal(t, int64(1), first[metricTotal+ab].Int)
	got, _ = built(e.swap()) // the postponed swap, as the snapshot comes back
	require.Equal(t, int64(1), got[metricTotal+ab].Int, "the postponed interval's call, sent once")

	// Nothing counted: nothing sent, every series removed.
	got, _ = sent()
	require.Nil(t, got)
	got, _ = sent()
	require.Nil(t, got)
	require.Zero(t, e.agg.series.live)
}

// Weighted edges in delta: whatever the flushes in between, the deltas of a series add up to
// what the cumulative output counts for the same calls (the fraction each delta leaves is
// carried to the next interval, not lost with it).
func TestDeltaWeightsAddUpToCumulative(t *testing.T) {
	thresholds := []string{"", "ot=th:8", "ot=th:c", "ot=th:55555555555555", "ot=th:e666"}
	run := func(delta bool, seed uint64) (sum int64, latency uint64) {
		cfg := createDefaultConfig().(*Config)
		if delta {
			cfg.AggregationTemporality = temporalityDelta
		}
		e := newEngine(newPlan(cfg))
		rng := rand.New(rand.NewPCG(seed, 1))
		// collect flushes: deltas add up, a cumulative flush replaces what the one before said.
		collect := func() {
			if !delta {
				sum, latency = 0, 0
			}
			md, _ := e.build(e.swap())
			for k, pt := range flatten(md) {
				switch {
				case strings.HasPrefix(k, metricTotal+"{"):
					sum += pt.Int
				case strings.HasPrefix(k, metricServer+"{"):
					latency += pt.Count
				}
			}
		}
		for i := range 300 {
			trace := byte(i)
			th := thresholds[rng.IntN(len(thresholds))]
			mod := func(s ptrace.Span) { s.TraceState().FromRaw(th) }
			// Four edges, so that an edge is often idle through an interval with a fraction
			// still to carry.
			server := []string{"b", "c", "d", "e"}[rng.IntN(4)]
			e.consume(oneSpan("a", ptrace.SpanKindClient, trace, 1, 0, mod), oneSpan(server, ptrace.SpanKindServer, trace, 2, 1, mod))
			if rng.IntN(3) == 0 {
				e.clock.Advance(time.Second)
				collect()
			}
		}
		e.clock.Advance(time.Second)
		collect()
		return sum, latency
	}
	for seed := range uint64(20) {
		cumulative, cumulativeLatency := run(false, seed)
		deltas, deltaLatency := run(true, seed)
		require.Positive(t, cumulative)
		require.Equal(t, cumulative, deltas, "seed %d: request_total", seed)
		require.Equal(t, cumulativeLatency, deltaLatency, "seed %d: latency count", seed)
	}
}
