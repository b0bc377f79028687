package hotspotfilter

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/hotspotfilter/internal/metadata"
)

func redisBatch(service string, firstID uint64, n int) ptrace.Traces {
	spans := make([]testSpan, n)
	for i := range spans {
		spans[i] = redis(service, firstID+uint64(i))
	}
	return makeTraces(spans...)
}

func TestBudgetPerServiceWithBurst(t *testing.T) {
	h := newHarness(t, singleRule(Rule{Budget: 10, Burst: 5, SlowThreshold: 10 * time.Millisecond, KeepErrors: true}))

	// A quiet service may send a burst at once; the rest is excess.
	h.consume(t, redisBatch("cart", 1, 20))
	assert.Len(t, h.keptIDs(), 5)

	// A second service has its own budget.
	h.consume(t, redisBatch("checkout", 101, 20))
	assert.Len(t, h.keptIDs(), 10)

	// Within the same instant nothing more passes.
	h.consume(t, redisBatch("cart", 201, 3))
	assert.Len(t, h.keptIDs(), 10)

	// 10 spans/s refill one span per 100ms ...
	h.clock.Advance(100 * time.Millisecond)
	h.consume(t, redisBatch("cart", 301, 3))
	assert.Len(t, h.keptIDs(), 11)

	// ... and a long pause refills at most the burst.
	h.clock.Advance(time.Minute)
	h.consume(t, redisBatch("cart", 401, 20))
	assert.Len(t, h.keptIDs(), 16)

	ps := h.flushPoints(t)
	assert.EqualValues(t, 11, sum(ps, metricKept, func(p point) bool { return p.service == "cart" && p.rule == "redis" && p.reason == "budget" }))
	assert.EqualValues(t, 46-11, sum(ps, metricDropped, func(p point) bool { return p.service == "cart" && p.rule == "redis" }))
	assert.EqualValues(t, 5, sum(ps, metricKept, func(p point) bool { return p.service == "checkout" }))
	assert.EqualValues(t, 15, sum(ps, metricDropped, func(p point) bool { return p.service == "checkout" }))
	assert.EqualValues(t, 2, sum(ps, metricHot, nil), "both services went over budget")
	assert.EqualValues(t, 2, sum(ps, metricTracked, nil))

	// Hot means over budget within the last interval: nothing since.
	ps = h.flushPoints(t)
	assert.EqualValues(t, 0, sum(ps, metricHot, nil))
	// Counters are cumulative.
	assert.EqualValues(t, 35, sum(ps, metricDropped, func(p point) bool { return p.service == "cart" }))
}

func TestRateOverTimeStaysWithinBudgetPlusBurst(t *testing.T) {
	const budget, burst = 50, 20
	h := newHarness(t, singleRule(Rule{Budget: budget, Burst: burst, KeepErrors: true}))
	// 1000 spans/s in batches of 10 every 10ms, for 3 seconds.
	id := uint64(1)
	for step := 0; step < 300; step++ {
		h.consume(t, redisBatch("cart", id, 10))
		id += 10
		h.clock.Advance(10 * time.Millisecond)
	}
	kept := len(h.keptIDs())
	// Steady state: burst, then budget per second over ~3s.
	assert.LessOrEqual(t, kept, burst+budget*3)
	assert.GreaterOrEqual(t, kept, burst+budget*3-1)
}

func TestNeverDropped(t *testing.T) {
	// Budget 0: every selected span that no exemption keeps is dropped.
	h := newHarness(t, singleRule(Rule{Budget: 0, SlowThreshold: 10 * time.Millisecond, KeepErrors: true}))

	errSpan := redis("cart", 1)
	errSpan.status = ptrace.StatusCodeError
	slow := redis("cart", 2)
	slow.dur = 10 * time.Millisecond // exactly at the threshold
	parent := redis("cart", 3)
	child := redis("cart", 4)
	child.parent = 3
	fast := redis("cart", 5)
	notRedis := testSpan{service: "cart", dbSystem: "postgresql", kind: ptrace.SpanKindClient, id: 6}
	server := redis("cart", 7)
	server.kind = ptrace.SpanKindServer
	noDB := testSpan{service: "cart", kind: ptrace.SpanKindClient, id: 8}

	in := makeTraces(errSpan, slow, parent, child, fast, notRedis, server, noDB)
	h.consume(t, in)
	assert.Equal(t, []uint64{1, 2, 3, 6, 7, 8}, h.keptIDs(), "child (4) and fast (5) are the only droppable spans")

	ps := h.flushPoints(t)
	for reason, want := range map[string]int64{"error": 1, "slow": 1, "parent": 1, "unmatched": 3, "budget": 0} {
		assert.EqualValues(t, want, sum(ps, metricKept, func(p point) bool { return p.reason == reason }), reason)
	}
	assert.EqualValues(t, 2, sum(ps, metricDropped, nil))
	assert.EqualValues(t, 8, sum(ps, metricKept, nil)+sum(ps, metricDropped, nil), "kept + dropped == sent")
}

func TestKeepErrorsFalse(t *testing.T) {
	h := newHarness(t, singleRule(Rule{Budget: 0, KeepErrors: false}))
	e := redis("cart", 1)
	e.status = ptrace.StatusCodeError
	h.consume(t, makeTraces(e))
	assert.Empty(t, h.keptIDs())
}

func TestSlowThresholdZeroDisablesExemption(t *testing.T) {
	h := newHarness(t, singleRule(Rule{Budget: 0, KeepErrors: true}))
	s := redis("cart", 1)
	s.dur = time.Second
	h.consume(t, makeTraces(s))
	assert.Empty(t, h.keptIDs())
}

func TestSampleExcess(t *testing.T) {
	h := newHarness(t, singleRule(Rule{Budget: 0, KeepErrors: true, SampleExcess: 3}))
	h.consume(t, redisBatch("cart", 1, 9))
	assert.Equal(t, []uint64{3, 6, 9}, h.keptIDs())
	ps := h.flushPoints(t)
	assert.EqualValues(t, 3, sum(ps, metricKept, func(p point) bool { return p.reason == "sampled" }))
	assert.EqualValues(t, 6, sum(ps, metricDropped, nil))
}

func TestServicesFilterAndRuleOrder(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Rules = []Rule{
		{Name: "cart-only", Condition: defaultCondition, Budget: 0, KeepErrors: true,
			Services: ServiceFilter{Include: []string{"cart", "checkout"}, Exclude: []string{"checkout"}}},
		{Name: "everyone", Condition: defaultCondition, Budget: 1, Burst: 1, KeepErrors: true},
	}
	h := newHarness(t, cfg)
	h.consume(t, makeTraces(redis("cart", 1), redis("cart", 2), redis("checkout", 3), redis("checkout", 4), redis("web", 5), redis("web", 6)))
	// cart: first rule, no budget. checkout (excluded) and web: second rule, one each.
	assert.Equal(t, []uint64{3, 5}, h.keptIDs())
	ps := h.flushPoints(t)
	assert.EqualValues(t, 2, sum(ps, metricDropped, func(p point) bool { return p.rule == "cart-only" && p.service == "cart" }))
	assert.EqualValues(t, 1, sum(ps, metricDropped, func(p point) bool { return p.rule == "everyone" && p.service == "checkout" }))
	assert.EqualValues(t, 1, sum(ps, metricDropped, func(p point) bool { return p.rule == "everyone" && p.service == "web" }))
}

func TestDefaultConditionSemconvVariants(t *testing.T) {
	h := newHarness(t, createDefaultConfig().(*Config))
	td := redisBatch("cart", 1, 150)
	// The current semantic conventions name the attribute db.system.name.
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < spans.Len(); i += 2 {
		spans.At(i).Attributes().Remove("db.system")
		spans.At(i).Attributes().PutStr("db.system.name", "redis")
	}
	h.consume(t, td)
	assert.Len(t, h.keptIDs(), 100, "default budget lets 100 of 150 through at once")
}

func TestBadInput(t *testing.T) {
	h := newHarness(t, singleRule(Rule{Budget: 0, SlowThreshold: 10 * time.Millisecond, KeepErrors: true}))

	noService := redis("", 1)
	noDB := testSpan{service: "cart", kind: ptrace.SpanKindClient, id: 2}
	endBeforeStart := redis("cart", 3)
	endBeforeStart.dur = -time.Hour // as uint64 the difference would look very slow
	h.consume(t, makeTraces(noService, noDB, endBeforeStart))
	assert.Equal(t, []uint64{2}, h.keptIDs())

	ps := h.flushPoints(t)
	assert.EqualValues(t, 1, sum(ps, metricDropped, func(p point) bool { return p.service == unknownService }))
	assert.EqualValues(t, 1, sum(ps, metricKept, func(p point) bool { return p.service == "cart" && p.reason == "unmatched" }))
	assert.EqualValues(t, 1, sum(ps, metricDropped, func(p point) bool { return p.service == "cart" }))
}

func TestServiceNameFloodIsBounded(t *testing.T) {
	cfg := singleRule(Rule{Budget: 1, Burst: 1, KeepErrors: true})
	cfg.MaxServices = 100
	h := newHarness(t, cfg)

	const services = 20000
	var spans []testSpan
	for i := 0; i < services; i++ {
		svc := fmt.Sprintf("svc-%d", i)
		spans = append(spans, redis(svc, uint64(2*i+1)), testSpan{service: svc, id: uint64(2*i + 2)})
	}
	h.consume(t, makeTraces(spans...))

	for _, ru := range h.filter.rules {
		assert.EqualValues(t, 100, ru.services.size.Load())
	}
	assert.EqualValues(t, 100, h.filter.unmatched.size.Load())

	ps := h.flushPoints(t)
	// The first 100 services have their own budget (1 each); the other
	// 19900 share the overflow budget (1 in total).
	assert.EqualValues(t, 101, sum(ps, metricKept, func(p point) bool { return p.reason == "budget" }))
	assert.EqualValues(t, 1, sum(ps, metricKept, func(p point) bool { return p.reason == "budget" && p.overflow }))
	assert.EqualValues(t, services-101, sum(ps, metricDropped, func(p point) bool { return p.overflow }))
	assert.EqualValues(t, services, sum(ps, metricKept, func(p point) bool { return p.reason == "unmatched" }))
	assert.EqualValues(t, 2*services, sum(ps, metricKept, nil)+sum(ps, metricDropped, nil), "kept + dropped == sent")
	assert.LessOrEqual(t, len(ps), 2*101+101+2+2, "series stay bounded")
}

func TestServiceExpiryFreesRoom(t *testing.T) {
	cfg := singleRule(Rule{Budget: 1, Burst: 1, KeepErrors: true})
	cfg.MaxServices = 1
	cfg.ServiceExpiry = time.Minute
	h := newHarness(t, cfg)

	h.consume(t, redisBatch("a", 1, 2))
	h.consume(t, redisBatch("b", 3, 2)) // over the cap: overflow
	ps := h.flushPoints(t)
	assert.EqualValues(t, 1, sum(ps, metricDropped, func(p point) bool { return p.service == "a" }))
	assert.EqualValues(t, 1, sum(ps, metricDropped, func(p point) bool { return p.overflow }))

	h.clock.Advance(2 * time.Minute)
	ps = h.flushPoints(t) // emits a's final counts, then forgets it
	assert.EqualValues(t, 1, sum(ps, metricDropped, func(p point) bool { return p.service == "a" }))
	ps = h.flushPoints(t)
	assert.EqualValues(t, 0, sum(ps, metricTracked, nil))

	h.consume(t, redisBatch("b", 5, 2))
	ps = h.flushPoints(t)
	assert.EqualValues(t, 1, sum(ps, metricDropped, func(p point) bool { return p.service == "b" }), "b got the freed place")
}

func TestInputIsNotMutated(t *testing.T) {
	h := newHarness(t, singleRule(Rule{Budget: 1, Burst: 1, KeepErrors: true}))
	in := redisBatch("cart", 1, 10)
	want := ptrace.NewTraces()
	in.CopyTo(want)
	// The collector's fan-out marks shared data read-only: any write panics.
	in.MarkReadOnly()
	want.MarkReadOnly()
	h.consume(t, in)
	assert.Equal(t, want, in)
	require.Len(t, h.kept.AllTraces(), 1)
	out := h.kept.AllTraces()[0]
	assert.False(t, out.IsReadOnly(), "the kept spans are new data")
	assert.Equal(t, 1, out.SpanCount())
	// Resource and scope are carried over.
	v, _ := out.ResourceSpans().At(0).Resource().Attributes().Get("service.name")
	assert.Equal(t, "cart", v.Str())
	assert.Equal(t, "test", out.ResourceSpans().At(0).ScopeSpans().At(0).Scope().Name())
	assert.False(t, h.traces.Capabilities().MutatesData)
	assert.False(t, h.metrics.Capabilities().MutatesData)
}

func TestAllDroppedSendsNothing(t *testing.T) {
	h := newHarness(t, singleRule(Rule{Budget: 0, KeepErrors: true}))
	h.consume(t, redisBatch("cart", 1, 3))
	assert.Empty(t, h.kept.AllTraces())
}

func TestMetricsOnlyDecidesAlone(t *testing.T) {
	cfg := singleRule(Rule{Budget: 1, Burst: 2, KeepErrors: true})
	set := connectortest.NewNopSettings(metadata.Type)
	sink := new(consumertest.MetricsSink)
	c, err := NewFactory().CreateTracesToMetrics(context.Background(), set, cfg, sink)
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, c.ConsumeTraces(context.Background(), redisBatch("cart", 1, 5)))
	require.NoError(t, c.Shutdown(context.Background())) // final flush
	require.NoError(t, c.Shutdown(context.Background()), "Shutdown is idempotent")
	require.Len(t, sink.AllMetrics(), 1)
	ps := points(sink.AllMetrics()[0])
	assert.EqualValues(t, 2, sum(ps, metricKept, nil))
	assert.EqualValues(t, 3, sum(ps, metricDropped, nil))
}

func TestFlushLoopEmitsOnInterval(t *testing.T) {
	cfg := singleRule(Rule{Budget: 1, Burst: 1, KeepErrors: true})
	cfg.MetricsFlushInterval = 5 * time.Millisecond
	set := connectortest.NewNopSettings(metadata.Type)
	traces, metrics := new(consumertest.TracesSink), new(consumertest.MetricsSink)
	f := NewFactory()
	tc, err := f.CreateTracesToTraces(context.Background(), set, cfg, traces)
	require.NoError(t, err)
	mc, err := f.CreateTracesToMetrics(context.Background(), set, cfg, metrics)
	require.NoError(t, err)
	require.Same(t, tc.(*tracesConnector).filter, mc.(*metricsConnector).filter, "both outputs share one filter")
	require.NoError(t, tc.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, mc.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, tc.ConsumeTraces(context.Background(), redisBatch("cart", 1, 4)))
	require.Eventually(t, func() bool { return len(metrics.AllMetrics()) >= 2 }, 5*time.Second, time.Millisecond)
	require.NoError(t, tc.Shutdown(context.Background()))
	require.NoError(t, mc.Shutdown(context.Background()))
	last := metrics.AllMetrics()[len(metrics.AllMetrics())-1]
	assert.EqualValues(t, 3, sum(points(last), metricDropped, nil))

	// The registry forgot the filter: a new pipeline gets fresh state.
	tc2, err := f.CreateTracesToTraces(context.Background(), set, cfg, traces)
	require.NoError(t, err)
	assert.NotSame(t, tc.(*tracesConnector).filter, tc2.(*tracesConnector).filter)
	require.NoError(t, tc2.Shutdown(context.Background()))
}

func TestConcurrentProducersNeverOverspend(t *testing.T) {
	const burst = 37
	h := newHarness(t, singleRule(Rule{Budget: 1, Burst: burst, KeepErrors: true}))
	const producers, batches, perBatch = 8, 50, 20
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for b := 0; b < batches; b++ {
				td := redisBatch(fmt.Sprintf("svc-%d", b%3), uint64((p*batches+b)*perBatch), perBatch)
				assert.NoError(t, h.traces.ConsumeTraces(context.Background(), td))
				assert.NoError(t, h.metrics.ConsumeTraces(context.Background(), td))
			}
		}(p)
	}
	wg.Wait()
	// The clock never moved: each of the 3 services got exactly its burst.
	assert.Len(t, h.keptIDs(), 3*burst)
	ps := h.flushPoints(t)
	assert.EqualValues(t, producers*batches*perBatch, sum(ps, metricKept, nil)+sum(ps, metricDropped, nil))
}

func TestServiceNameFloodRetainsBoundedMemory(t *testing.T) {
	retained := func(maxServices int) (grown uint64) {
		t.Run(fmt.Sprintf("max_services=%d", maxServices), func(t *testing.T) {
			grown = floodHeapGrowth(t, maxServices)
		})
		return grown
	}
	// 50,000 services: capped at 100 the filter keeps almost nothing; with
	// room for all of them it keeps each one (the control shows the
	// measurement can see the difference).
	capped := retained(100)
	uncapped := retained(100_000)
	t.Logf("heap retained after 50,000 unique services: %d KB capped at 100, %d KB uncapped", capped/1024, uncapped/1024)
	assert.Less(t, capped, uint64(1<<20), "capped filter retains under 1 MB")
	assert.Greater(t, uncapped, 10*capped)
}

// floodHeapGrowth feeds 50,000 unique services (a Redis and an other span
// each) and returns how much the live heap grew.
func floodHeapGrowth(t *testing.T, maxServices int) uint64 {
	cfg := singleRule(Rule{Budget: 1, Burst: 1, KeepErrors: true})
	cfg.MaxServices = maxServices
	h := newHarness(t, cfg)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for b := 0; b < 50; b++ {
		spans := make([]testSpan, 0, 2000)
		for i := 0; i < 1000; i++ {
			svc := fmt.Sprintf("flood-%d-%d", b, i)
			spans = append(spans, redis(svc, uint64(2*i+1)), testSpan{service: svc, id: uint64(2*i + 2)})
		}
		h.consume(t, makeTraces(spans...))
		h.kept.Reset()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(h)
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return after.HeapAlloc - before.HeapAlloc
}

// The collector shuts components down upstream first, in any order between
// the two connectors: the metrics connector's own Shutdown must emit the final
// counts while its exporter still runs, whatever the traces connector does.
func TestFinalFlushAtMetricsShutdown(t *testing.T) {
	for _, metricsFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("metrics_first=%v", metricsFirst), func(t *testing.T) {
			cfg := singleRule(Rule{Budget: 1, Burst: 1, KeepErrors: true})
			cfg.MetricsFlushInterval = time.Hour // only the final flush emits
			set := connectortest.NewNopSettings(metadata.Type)
			f := NewFactory()
			traces, metrics := new(consumertest.TracesSink), new(consumertest.MetricsSink)
			tc, err := f.CreateTracesToTraces(context.Background(), set, cfg, traces)
			require.NoError(t, err)
			mc, err := f.CreateTracesToMetrics(context.Background(), set, cfg, metrics)
			require.NoError(t, err)
			require.NoError(t, mc.Start(context.Background(), componenttest.NewNopHost()))
			require.NoError(t, tc.Start(context.Background(), componenttest.NewNopHost()))
			td := redisBatch("cart", 1, 3)
			require.NoError(t, tc.ConsumeTraces(context.Background(), td))
			require.NoError(t, mc.ConsumeTraces(context.Background(), td))

			first, second := tc, mc
			if metricsFirst {
				first, second = mc, tc
			}
			require.NoError(t, first.Shutdown(context.Background()))
			if metricsFirst {
				require.Len(t, metrics.AllMetrics(), 1, "emitted at the metrics connector's shutdown")
			} else {
				require.Empty(t, metrics.AllMetrics())
			}
			require.NoError(t, second.Shutdown(context.Background()))
			require.Len(t, metrics.AllMetrics(), 1, "emitted exactly once")
			ps := points(metrics.AllMetrics()[0])
			assert.EqualValues(t, 1, sum(ps, metricKept, nil))
			assert.EqualValues(t, 2, sum(ps, metricDropped, nil))
		})
	}
}

// Without a metrics output the flush loop still runs, so idle services are
// forgotten and the cap keeps room for new ones.
func TestTracesOnlyStillExpiresServices(t *testing.T) {
	cfg := singleRule(Rule{Budget: 1, Burst: 1, KeepErrors: true})
	cfg.MetricsFlushInterval = 5 * time.Millisecond
	cfg.ServiceExpiry = time.Minute
	clock := newFakeClock()
	sink := new(consumertest.TracesSink)
	c, err := newFactory(clock).CreateTracesToTraces(context.Background(), connectortest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	f := c.(*tracesConnector).filter
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, c.Shutdown(context.Background())) }()

	require.NoError(t, c.ConsumeTraces(context.Background(), redisBatch("cart", 1, 2)))
	require.EqualValues(t, 1, f.rules[0].services.size.Load())
	clock.Advance(2 * time.Minute)
	require.Eventually(t, func() bool { return f.rules[0].services.size.Load() == 0 }, 5*time.Second, time.Millisecond)
}
