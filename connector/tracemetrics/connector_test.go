package tracemetrics

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// startOurs starts tracemetrics with its own telemetry, without the spanmetrics harness.
func startOurs(t *testing.T, raw map[string]any, start bool) (*connectorImp, *consumertest.MetricsSink, *clockwork.FakeClock, *componenttest.Telemetry) {
	t.Helper()
	return startOursFrom(t, NewFactory(), raw, start)
}

// startOursFrom is startOurs with ours built by the given factory (see oursWith).
func startOursFrom(t *testing.T, f connector.Factory, raw map[string]any, start bool) (*connectorImp, *consumertest.MetricsSink, *clockwork.FakeClock, *componenttest.Telemetry) {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(raw).Unmarshal(cfg))
	require.NoError(t, cfg.Validate())
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := connectortest.NewNopSettings(NewFactory().Type())
	set.TelemetrySettings = tel.NewTelemetrySettings()
	set.Resource.Attributes().PutStr(series.CollectorInstanceKey, testInstanceID)
	clock := clockwork.NewFakeClockAt(testStart)
	sink := new(consumertest.MetricsSink)
	conn, err := f.CreateTracesToMetrics(clockwork.AddToContext(context.Background(), clock), set, cfg, sink)
	require.NoError(t, err)
	c := conn.(*connectorImp)
	if start {
		require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	}
	t.Cleanup(func() { _ = c.Shutdown(context.Background()) })
	return c, sink, clock, tel
}

// totals adds up calls values and histogram counts of one export.
type totals struct {
	calls, durations, overflowCalls int64
	nSeries                         int
}

func sumUp(md pmetric.Metrics) totals {
	var t totals
	for i := 0; i < md.ResourceMetrics().Len(); i++ {
		sms := md.ResourceMetrics().At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				switch m.Type() {
				case pmetric.MetricTypeSum:
					for d := 0; d < m.Sum().DataPoints().Len(); d++ {
						dp := m.Sum().DataPoints().At(d)
						t.calls += dp.IntValue()
						t.nSeries++
						if _, ok := dp.Attributes().Get(series.OverflowKey); ok {
							t.overflowCalls += dp.IntValue()
						}
					}
				case pmetric.MetricTypeHistogram:
					for d := 0; d < m.Histogram().DataPoints().Len(); d++ {
						t.durations += int64(m.Histogram().DataPoints().At(d).Count())
					}
				case pmetric.MetricTypeExponentialHistogram:
					for d := 0; d < m.ExponentialHistogram().DataPoints().Len(); d++ {
						t.durations += int64(m.ExponentialHistogram().DataPoints().At(d).Count())
					}
				}
			}
		}
	}
	return t
}

func countedSpans(td ptrace.Traces) int64 {
	n := int64(0)
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		if _, ok := rs.Resource().Attributes().Get(series.ServiceNameKey); ok {
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				n += int64(rs.ScopeSpans().At(j).Spans().Len())
			}
		}
	}
	return n
}

// Concurrent producers while flushes happen: with delta temporality the calls of all flushes
// add up to the spans sent, exactly; with cumulative temporality the final flush holds them.
func TestConcurrentProducersCountEverySpan(t *testing.T) {
	for _, temporality := range []string{"AGGREGATION_TEMPORALITY_DELTA", "AGGREGATION_TEMPORALITY_CUMULATIVE"} {
		for _, hist := range []map[string]any{{}, {"exponential": map[string]any{"max_size": 30}}} {
			t.Run(temporality, func(t *testing.T) {
				c, sink, clock, _ := startOurs(t, map[string]any{
					"aggregation_temporality": temporality,
					"metrics_flush_interval":  time.Second,
					"ring_size":               8, // small: producers hit a full ring too
					"max_series":              40,
					// The fake clock races ahead (a second per millisecond): with cumulative
					// temporality the final export must still hold every series.
					"series_expiration": 0,
					"histogram":         hist,
					"dimensions":        dims("http.method", "http.status_code"),
				}, true)
				const producers, calls = 8, 150
				var sent [producers]int64
				var wg sync.WaitGroup
				stopFlushing := make(chan struct{})
				flusherDone := make(chan struct{})
				go func() {
					defer close(flusherDone)
					for {
						select {
						case <-stopFlushing:
							return
						default:
							clock.Advance(time.Second)
							time.Sleep(time.Millisecond)
						}
					}
				}()
				for p := 0; p < producers; p++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r := newRand(uint64(p))
						for i := 0; i < calls; i++ {
							td := genTraces(r, 1+r.IntN(60), genOptions{services: 5, names: 20, bad: true})
							sent[p] += countedSpans(td)
							assert.NoError(t, c.ConsumeTraces(context.Background(), td))
						}
					}()
				}
				wg.Wait()
				close(stopFlushing)
				<-flusherDone
				require.NoError(t, c.Shutdown(context.Background()))
				require.NoError(t, c.Shutdown(context.Background()), "Shutdown is idempotent")

				var want int64
				for _, n := range sent {
					want += n
				}
				all := sink.AllMetrics()
				require.NotEmpty(t, all)
				var got totals
				if temporality == "AGGREGATION_TEMPORALITY_DELTA" {
					for _, md := range all {
						s := sumUp(md)
						got.calls += s.calls
						got.durations += s.durations
						got.overflowCalls += s.overflowCalls
					}
				} else {
					got = sumUp(all[len(all)-1])
				}
				require.Equal(t, want, got.calls, "calls")
				require.Equal(t, want, got.durations, "histogram counts")
				require.Equal(t, want, c.tel.AggregatedSpans.Load(), "aggregated_spans")
				require.Positive(t, got.overflowCalls, "max_series sends the excess to overflow series")
			})
		}
	}
}

func TestSeriesLimitsOverflowKeepsTotalsExact(t *testing.T) {
	c, sink, _, tel := startOurs(t, map[string]any{
		"max_series":             12,
		"max_series_per_service": 3,
	}, true)
	var want int64
	r := newRand(9)
	for i := 0; i < 20; i++ {
		td := genTraces(r, 100, genOptions{services: 5, names: 10})
		want += countedSpans(td)
		require.NoError(t, c.ConsumeTraces(context.Background(), td))
	}
	c.settle(t)
	m, err := tel.GetMetric("otelcol_connector_tracemetrics_aggregated_spans")
	require.NoError(t, err)
	require.Equal(t, want, m.Data.(metricdata.Sum[int64]).DataPoints[0].Value, "aggregated_spans")
	byLimit := overflowSpansByLimit(t, tel)
	require.Len(t, byLimit, 2, "a series per configured limit")
	overflowSpans := byLimit["max_series"] + byLimit["max_series_per_service"]
	require.NoError(t, c.Shutdown(context.Background()))
	md := sink.AllMetrics()[0]
	got := sumUp(md)
	require.Equal(t, want, got.calls)
	require.Equal(t, want, got.durations)
	require.Positive(t, got.overflowCalls)
	// Per service at most 3 series, plus overflow series per resource, span kind and status code.
	perResource := map[string]int{}
	for i := 0; i < md.ResourceMetrics().Len(); i++ {
		rm := md.ResourceMetrics().At(i)
		calls := rm.ScopeMetrics().At(0).Metrics().At(0).Sum().DataPoints()
		for d := 0; d < calls.Len(); d++ {
			attrs := calls.At(d).Attributes()
			svc, _ := rm.Resource().Attributes().Get(series.ServiceNameKey)
			if _, ok := attrs.Get(series.OverflowKey); ok {
				// max_series and max_series_per_service's overflow keeps what error rates need,
				// and the collector instance ID every series has.
				require.Equal(t, len(capOverflowAttributes), attrs.Len(), "overflow, service name, span kind, status code, instance")
				got, _ := attrs.Get(series.ServiceNameKey)
				require.Equal(t, svc.AsString(), got.AsString())
				continue
			}
			perResource[svc.AsString()]++
		}
	}
	total := 0
	for svc, n := range perResource {
		require.LessOrEqual(t, n, 3, svc)
		total += n
	}
	require.LessOrEqual(t, total, 12)
	require.Equal(t, got.overflowCalls, overflowSpans)
}

// Shutdown flushes what was accepted since the last flush, even series never exported before,
// and refuses spans afterwards.
func TestShutdownFlushesEverything(t *testing.T) {
	c, sink, _, _ := startOurs(t, map[string]any{}, true)
	r := newRand(1)
	td := genTraces(r, 500, genOptions{services: 3, names: 5})
	require.NoError(t, c.ConsumeTraces(context.Background(), td))
	require.Empty(t, sink.AllMetrics(), "nothing flushed before the interval")
	require.NoError(t, c.Shutdown(context.Background()))
	require.Len(t, sink.AllMetrics(), 1)
	got := sumUp(sink.AllMetrics()[0])
	require.Equal(t, countedSpans(td), got.calls)
	require.Equal(t, countedSpans(td), got.durations)
	require.ErrorIs(t, c.ConsumeTraces(context.Background(), td), errShutdown)
}

// A cumulative series shows its count from its first flush on: no calls point is ever 0
// (a series exists only because a span was counted), and at every flush each series' calls
// equal its histogram count, new series included. spanmetrics exports 0 first; see
// flusher.buildSums for why tracemetrics does not.
func TestNewCumulativeSeriesCarryTheirCount(t *testing.T) {
	c, sink, clock, _ := startOurs(t, map[string]any{"metrics_flush_interval": 15 * time.Second}, true)
	r := newRand(3)
	var sent int64
	for flush := 0; flush < 3; flush++ {
		// More services each time: every flush has new series beside known ones.
		td := genTraces(r, 400, genOptions{services: 2 + 2*flush, names: 5})
		require.NoError(t, c.ConsumeTraces(context.Background(), td))
		sent += countedSpans(td)
		md := flushOnce(t, c, sink, clock, 15*time.Second)
		calls, durations := map[string]int64{}, map[string]int64{}
		for i := 0; i < md.ResourceMetrics().Len(); i++ {
			rm := md.ResourceMetrics().At(i)
			res := attrString(rm.Resource().Attributes())
			ms := rm.ScopeMetrics().At(0).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				switch m.Type() {
				case pmetric.MetricTypeSum:
					for d := 0; d < m.Sum().DataPoints().Len(); d++ {
						dp := m.Sum().DataPoints().At(d)
						require.Positive(t, dp.IntValue(), "flush %d: calls of a counted series", flush)
						calls[res+attrString(dp.Attributes())] = dp.IntValue()
					}
				case pmetric.MetricTypeHistogram:
					for d := 0; d < m.Histogram().DataPoints().Len(); d++ {
						dp := m.Histogram().DataPoints().At(d)
						durations[res+attrString(dp.Attributes())] = int64(dp.Count())
					}
				}
			}
		}
		require.Equal(t, durations, calls, "flush %d: calls and histogram count of every series", flush)
		require.Equal(t, sent, sumUp(md).calls, "flush %d: cumulative calls", flush)
	}
}

func TestShutdownWithoutStart(t *testing.T) {
	c, _, _, _ := startOurs(t, map[string]any{}, false)
	require.NoError(t, c.Shutdown(context.Background()))
}

// A full ring makes ConsumeTraces wait, bounded by its context; a refused batch is not
// aggregated, and an accepted one is never lost.
func TestFullRingAppliesBackpressure(t *testing.T) {
	c, sink, _, tel := startOurs(t, map[string]any{"ring_size": 2}, false) // aggregator not running yet
	r := newRand(2)
	var accepted int64
	for i := 0; i < 2; i++ {
		td := genTraces(r, 10, genOptions{services: 1, names: 2})
		require.NoError(t, c.ConsumeTraces(context.Background(), td))
		accepted += countedSpans(td)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	refused := genTraces(r, 10, genOptions{services: 1, names: 2})
	err := c.ConsumeTraces(ctx, refused)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "got %v", err)
	require.Equal(t, uint64(1), c.pipe.Queue.Stats().FullWaits)
	m, err := tel.GetMetric("otelcol_connector_tracemetrics_refused_spans")
	require.NoError(t, err)
	require.Equal(t, countedSpans(refused), m.Data.(metricdata.Sum[int64]).DataPoints[0].Value)

	// A waiting producer proceeds as soon as the aggregator makes room.
	done := make(chan error)
	waiting := genTraces(r, 10, genOptions{services: 1, names: 2})
	go func() { done <- c.ConsumeTraces(context.Background(), waiting) }()
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, <-done)
	accepted += countedSpans(waiting)
	require.NoError(t, c.Shutdown(context.Background()))
	require.Equal(t, accepted, sumUp(sink.AllMetrics()[0]).calls)
}

// TestRingMemoryAppliesBackpressure: with the ring far from full, batches of many new series
// stop being accepted once those queued reach ring_memory_mib; a caller whose context ends
// meanwhile gets its error and its spans are counted as refused; a waiting caller proceeds when
// the aggregator applies what is held; every accepted span is counted, and afterwards nothing is
// held and the batches kept for reuse stay within the bound.
func TestRingMemoryAppliesBackpressure(t *testing.T) {
	c, sink, _, tel := startOurs(t, map[string]any{"ring_memory_mib": 1}, false) // aggregator not running yet
	r := newRand(3)
	const bound = 1 << 20
	var accepted int64
	for i := 0; ; i++ {
		require.Less(t, i, 1000, "the byte bound never held a batch back")
		td := genTraces(r, 2000, genOptions{services: 50, names: 400})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		err := c.ConsumeTraces(ctx, td)
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			m, err := tel.GetMetric("otelcol_connector_tracemetrics_refused_spans")
			require.NoError(t, err)
			require.Equal(t, countedSpans(td), m.Data.(metricdata.Sum[int64]).DataPoints[0].Value)
			break
		}
		accepted += countedSpans(td)
		require.LessOrEqual(t, c.pipe.Queue.HeldBytes(), int64(bound))
	}
	require.Less(t, c.pipe.Queue.Len(), c.pipe.Queue.Cap()/4, "held back by bytes, not by a full ring")
	require.Equal(t, uint64(1), c.pipe.Queue.Stats().BytesWaits)
	require.Zero(t, c.pipe.Queue.Stats().FullWaits)
	m, err := tel.GetMetric("otelcol_connector_tracemetrics_ring_memory_waits")
	require.NoError(t, err)
	require.Equal(t, int64(1), m.Data.(metricdata.Sum[int64]).DataPoints[0].Value)
	m, err = tel.GetMetric("otelcol_connector_tracemetrics_ring_memory")
	require.NoError(t, err)
	held := m.Data.(metricdata.Gauge[int64]).DataPoints[0].Value
	require.Equal(t, c.pipe.Queue.HeldBytes(), held)
	require.Greater(t, held, int64(bound/2))

	done := make(chan error)
	waiting := genTraces(r, 2000, genOptions{services: 50, names: 400})
	go func() { done <- c.ConsumeTraces(context.Background(), waiting) }()
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, <-done)
	accepted += countedSpans(waiting)
	require.NoError(t, c.Shutdown(context.Background()))
	require.Equal(t, accepted, sumUp(mergeMetrics(sink.AllMetrics())).calls)
	require.Zero(t, c.pipe.Queue.HeldBytes())
	require.Positive(t, c.pipe.Free.HeldBytes())
	require.LessOrEqual(t, c.pipe.Free.HeldBytes(), int64(bound))
}

func flushOnce(t *testing.T, c *connectorImp, sink *consumertest.MetricsSink, clock *clockwork.FakeClock, d time.Duration) pmetric.Metrics {
	t.Helper()
	n := len(sink.AllMetrics())
	// The tick makes a sleeping aggregator drain the ring before it swaps, but a busy one swaps
	// within its round (on time under load), leaving the rest for the next interval.
	c.settle(t)
	require.Eventually(t, c.flusherIdle, 5*time.Second, time.Millisecond)
	flushes := c.tel.Flushes.Load()
	clock.Advance(d)
	require.Eventually(t, func() bool { return c.tel.Flushes.Load() > flushes }, 5*time.Second, time.Millisecond)
	return mergeMetrics(sink.AllMetrics()[n:])
}

func oneSpan(service, name string) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(series.ServiceNameKey, service)
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetName(name)
	sp.SetStartTimestamp(1)
	sp.SetEndTimestamp(2_000_001)
	return td
}

func TestSeriesExpiration(t *testing.T) {
	c, sink, clock, _ := startOurs(t, map[string]any{
		"metrics_flush_interval": 10 * time.Second,
		"series_expiration":      25 * time.Second,
	}, true)
	require.NoError(t, c.ConsumeTraces(context.Background(), oneSpan("a", "idle")))
	for i := 0; i < 4; i++ {
		require.NoError(t, c.ConsumeTraces(context.Background(), oneSpan("a", "busy")))
		md := flushOnce(t, c, sink, clock, 10*time.Second)
		// The idle series is exported at the flush where it expires, then no more.
		want := 2
		if i >= 3 {
			want = 1
		}
		require.Equal(t, want, sumUp(md).nSeries, "flush %d", i)
	}
	require.EqualValues(t, 1, c.tel.SeriesLive.Load())
}

func TestMetricsExpirationDropsIdleResources(t *testing.T) {
	c, sink, clock, _ := startOurs(t, map[string]any{
		"metrics_flush_interval": 10 * time.Second,
		"metrics_expiration":     15 * time.Second,
	}, true)
	require.NoError(t, c.ConsumeTraces(context.Background(), oneSpan("gone", "x")))
	require.NoError(t, c.ConsumeTraces(context.Background(), oneSpan("gone", "y")))
	for i := 0; i < 3; i++ {
		require.NoError(t, c.ConsumeTraces(context.Background(), oneSpan("alive", "x")))
		md := flushOnce(t, c, sink, clock, 10*time.Second)
		want := 2
		if i >= 2 {
			want = 1
		}
		require.Equal(t, want, md.ResourceMetrics().Len(), "flush %d", i)
	}
	// The resource table holds the live one alone: internal/aggregate TestIdleResourcesLeave.
}

func TestResourceCacheSizeEvictsLeastRecentlySeen(t *testing.T) {
	c, sink, clock, _ := startOurs(t, map[string]any{
		"metrics_flush_interval":      10 * time.Second,
		"resource_metrics_cache_size": 2,
	}, true)
	require.NoError(t, c.ConsumeTraces(context.Background(), oneSpan("first", "x")))
	clock.Advance(time.Second)
	require.NoError(t, c.ConsumeTraces(context.Background(), oneSpan("second", "x")))
	require.NoError(t, c.ConsumeTraces(context.Background(), oneSpan("third", "x")))
	require.Equal(t, 3, flushOnce(t, c, sink, clock, 9*time.Second).ResourceMetrics().Len(), "evicted resources are exported one last time")
	md := flushOnce(t, c, sink, clock, 10*time.Second)
	require.Equal(t, 2, md.ResourceMetrics().Len())
	for i := 0; i < md.ResourceMetrics().Len(); i++ {
		svc, _ := md.ResourceMetrics().At(i).Resource().Attributes().Get(series.ServiceNameKey)
		require.NotEqual(t, "first", svc.Str())
	}
}

// A slow next consumer never blocks ingest: the flush that finds the flusher busy is skipped
// and its data goes out as soon as the flusher is free again.
func TestSlowDownstreamSkipsFlushWithoutLoss(t *testing.T) {
	release := make(chan struct{})
	blocking := &blockingSink{release: release}
	cfg := createDefaultConfig().(*Config)
	cfg.MetricsFlushInterval = time.Second
	clock := clockwork.NewFakeClockAt(testStart)
	conn, err := NewFactory().CreateTracesToMetrics(clockwork.AddToContext(context.Background(), clock),
		connectortest.NewNopSettings(NewFactory().Type()), cfg, blocking)
	require.NoError(t, err)
	c := conn.(*connectorImp)
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, c.ConsumeTraces(context.Background(), oneSpan("a", "x")))
	// Each tick drains the ring before the swap: no need to wait for the aggregator first.
	clock.Advance(time.Second) // flusher now blocked in ConsumeMetrics
	require.Eventually(t, func() bool { return blocking.calls() == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, c.ConsumeTraces(context.Background(), oneSpan("a", "x")))
	clock.Advance(time.Second) // postponed: no spare buffer
	require.Eventually(t, func() bool { return c.tel.FlushesSkipped.Load() == 1 }, 5*time.Second, time.Millisecond)
	close(release)
	// The postponed flush goes out as soon as the flusher is back, not a whole interval later.
	require.Eventually(t, func() bool { return len(blocking.all()) == 2 }, 5*time.Second, time.Millisecond)
	require.Equal(t, int64(2), sumUp(blocking.all()[1]).calls)
	require.NoError(t, c.Shutdown(context.Background()))
	require.Len(t, blocking.all(), 3) // Shutdown's final flush
	require.EqualValues(t, 3, c.tel.Flushes.Load(), "the postponed flush counts once, when it happens")
}

type blockingSink struct {
	consumertest.MetricsSink
	release chan struct{}
	mu      sync.Mutex
	n       int
}

func (b *blockingSink) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	b.mu.Lock()
	b.n++
	b.mu.Unlock()
	<-b.release
	return b.MetricsSink.ConsumeMetrics(ctx, md)
}

func (b *blockingSink) calls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

func (b *blockingSink) all() []pmetric.Metrics { return b.AllMetrics() }

// With the defaults (cumulative, no series_expiration configured), the series of a
// cardinality burst expire once idle, so the memory they hold comes back instead of keeping
// the heap over the memory limiter's soft limit for good.
func TestDefaultsExpireABurst(t *testing.T) {
	c, sink, clock, _ := startOurs(t, map[string]any{}, true)
	for i := 0; i < 500; i++ {
		require.NoError(t, c.ConsumeTraces(context.Background(), oneSpan("svc", fmt.Sprintf("burst-%d", i))))
	}
	flushOnce(t, c, sink, clock, defaultFlushInterval)
	require.EqualValues(t, 500, c.tel.SeriesLive.Load())
	for elapsed := time.Duration(0); elapsed <= defaultSeriesExpiration; elapsed += defaultFlushInterval {
		require.NoError(t, c.ConsumeTraces(context.Background(), oneSpan("svc", "steady")))
		flushOnce(t, c, sink, clock, defaultFlushInterval)
	}
	require.EqualValues(t, 1, c.tel.SeriesLive.Load(), "only the steady series is left")
	// The index gives the burst's slots back: internal/aggregate TestIdleSeriesGiveIndexSlotsBack.
}
