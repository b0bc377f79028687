package cachedprom

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"
)

func deltaCounter(v float64, start, end time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("hits")
	s := m.SetEmptySum()
	s.SetIsMonotonic(true)
	s.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	dp := s.DataPoints().AppendEmpty()
	dp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	dp.SetTimestamp(pcommon.NewTimestampFromTime(end))
	dp.SetDoubleValue(v)
	return md
}

func body(t *testing.T, e *cachedExporter) string {
	t.Helper()
	e.renderNow()
	return textOf(t, hold(t, e))
}

func TestDeltaSumsAccumulate(t *testing.T) {
	e, _ := startOurs(t, func(c *Config) { c.RenderInterval = time.Hour })
	ctx := context.Background()
	t0 := promtest.TestBase
	require.NoError(t, e.ConsumeMetrics(ctx, deltaCounter(2, t0, t0.Add(time.Second))))
	require.NoError(t, e.ConsumeMetrics(ctx, deltaCounter(3, t0.Add(time.Second), t0.Add(2*time.Second))))
	assert.Contains(t, body(t, e), "hits_total{otel_scope_name=\"\",otel_scope_schema_url=\"\",otel_scope_version=\"\"} 5\n")
	// An older point overlaps what is held: dropped and counted.
	require.NoError(t, e.ConsumeMetrics(ctx, deltaCounter(100, t0, t0.Add(time.Second))))
	assert.Contains(t, body(t, e), "} 5\n")
	// A series idle for a few intervals comes back with a start later than
	// its previous end (tracemetrics' delta output): a count for its
	// interval, added. The stock exporter resets the series to 7 here.
	require.NoError(t, e.ConsumeMetrics(ctx, deltaCounter(7, t0.Add(5*time.Second), t0.Add(6*time.Second))))
	assert.Contains(t, body(t, e), "} 12\n")
}

// TestDeltaWritersInterleave: several OTLP series writing deltas to one
// Prometheus series (graph gateways writing one edge, each naming itself in
// a scope attribute that without_scope_info keeps off the labels) have
// intervals that overlap each other's. Each writer's intervals are checked
// against its own: all of them count, and a writer's retry is still dropped.
func TestDeltaWritersInterleave(t *testing.T) {
	e, _ := startOurs(t, func(c *Config) { c.RenderInterval = time.Hour; c.WithoutScopeInfo = true })
	ctx := context.Background()
	point := func(writer string, v uint64, start, end time.Time) pmetric.Metrics {
		md := pmetric.NewMetrics()
		sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
		sm.Scope().Attributes().PutStr("writer", writer)
		ms := sm.Metrics()
		m := ms.AppendEmpty()
		m.SetName("calls")
		sum := m.SetEmptySum()
		sum.SetIsMonotonic(true)
		sum.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
		dp := sum.DataPoints().AppendEmpty()
		dp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		dp.SetTimestamp(pcommon.NewTimestampFromTime(end))
		dp.SetIntValue(int64(v))
		m = ms.AppendEmpty()
		m.SetName("lat")
		h := m.SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
		hp := h.DataPoints().AppendEmpty()
		hp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		hp.SetTimestamp(pcommon.NewTimestampFromTime(end))
		hp.ExplicitBounds().FromRaw([]float64{1})
		hp.BucketCounts().FromRaw([]uint64{v, 0})
		hp.SetCount(v)
		hp.SetSum(float64(v))
		return md
	}
	t0 := promtest.TestBase
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	seen := time.Now() // no series was updated before
	for _, p := range []pmetric.Metrics{
		point("a", 1, t0, t0.Add(ms(1000))),
		point("b", 10, t0.Add(ms(300)), t0.Add(ms(1300))),
		point("c", 100, t0.Add(ms(600)), t0.Add(ms(1600))),
		point("a", 2, t0.Add(ms(1000)), t0.Add(ms(2000))),
		point("b", 20, t0.Add(ms(1300)), t0.Add(ms(2300))),
		point("c", 200, t0.Add(ms(1600)), t0.Add(ms(2600))),
	} {
		require.NoError(t, e.ConsumeMetrics(ctx, p))
	}
	out := body(t, e)
	assert.Contains(t, out, "calls_total 333\n", out)
	assert.Contains(t, out, "lat_count 333\n", out)
	assert.Contains(t, out, `lat_bucket{le="1"} 333`+"\n", out)
	// A retry of b's second interval overlaps b's own last one: dropped.
	require.NoError(t, e.ConsumeMetrics(ctx, point("b", 20, t0.Add(ms(1300)), t0.Add(ms(2300)))))
	out = body(t, e)
	assert.Contains(t, out, "calls_total 333\n", out)
	assert.Contains(t, out, "lat_count 333\n", out)

	// Writers quiet since before the expiry cutoff are forgotten, their series kept: the
	// writers of a long-lived series do not pile up as gateways come and go.
	require.Equal(t, 6, e.store.Sizes().Writers, "3 writers × 2 series")
	require.Zero(t, e.store.Expire(time.Unix(0, min(seen.UnixNano(), int64(pcommon.NewTimestampFromTime(t0.Add(ms(2600)))))+1)))
	assert.Zero(t, e.store.Sizes().Writers)
	assert.Equal(t, 2, e.store.Sizes().Rows)
}

// TestDeltaHistogramGapIsAdded is the histogram side of the gap rule.
func TestDeltaHistogramGapIsAdded(t *testing.T) {
	e, _ := startOurs(t, func(c *Config) { c.RenderInterval = time.Hour })
	hist := func(start, end time.Time, counts ...uint64) pmetric.Metrics {
		md := pmetric.NewMetrics()
		m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName("lat")
		h := m.SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
		dp := h.DataPoints().AppendEmpty()
		dp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		dp.SetTimestamp(pcommon.NewTimestampFromTime(end))
		dp.ExplicitBounds().FromRaw([]float64{1})
		dp.BucketCounts().FromRaw(counts)
		dp.SetCount(counts[0] + counts[1])
		dp.SetSum(float64(counts[0] + counts[1]))
		return md
	}
	t0 := promtest.TestBase
	ctx := context.Background()
	require.NoError(t, e.ConsumeMetrics(ctx, hist(t0, t0.Add(time.Second), 1, 2)))
	require.NoError(t, e.ConsumeMetrics(ctx, hist(t0.Add(9*time.Second), t0.Add(10*time.Second), 4, 8)))
	out := body(t, e)
	assert.Contains(t, out, `lat_bucket{otel_scope_name="",otel_scope_schema_url="",otel_scope_version="",le="1"} 5`+"\n")
	assert.Contains(t, out, `lat_count{otel_scope_name="",otel_scope_schema_url="",otel_scope_version=""} 15`+"\n")
}

func TestNoRecordedValueDeletesSeries(t *testing.T) {
	e, _ := startOurs(t, func(c *Config) { c.RenderInterval = time.Hour })
	ctx := context.Background()
	require.NoError(t, e.ConsumeMetrics(ctx, promtest.GaugeBatch("temp", promtest.TestBase, "a", "b")))
	require.Equal(t, 2, e.store.Sizes().Rows)
	md := promtest.GaugeBatch("temp", promtest.TestBase.Add(time.Second), "a")
	md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().At(0).SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
	require.NoError(t, e.ConsumeMetrics(ctx, md))
	assert.Equal(t, 1, e.store.Sizes().Rows)
	assert.NotContains(t, body(t, e), `k="a"`)
}

func TestExpiryRunsWithoutScrapes(t *testing.T) {
	e, _ := startOurs(t, func(c *Config) {
		c.MetricExpiration = 100 * time.Millisecond
		c.RenderInterval = 10 * time.Millisecond
	})
	require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.GaugeBatch("temp", promtest.TestBase, "a", "b", "c")))
	require.Equal(t, 3, e.store.Sizes().Rows)
	// Nobody scrapes; the timer alone must expire the series and publish a
	// snapshot without them (target_info included).
	require.Eventually(t, func() bool {
		s := e.snapshot.Load()
		return e.store.Sizes().Rows == 0 && s != nil && s.Body(render.BodyText).Len == 0
	}, 5*time.Second, 10*time.Millisecond)
	assert.Zero(t, e.store.Sizes().Resources)
	assert.Zero(t, e.store.Sizes().Families)
	assert.Zero(t, e.store.Sizes().LabelSets)
}

// TestRenderLoopFollowsItsClock drives the render loop's steps with a fake
// clock: renders wait for ingest to pause and for the pause after the
// previous render, and expiry removes a series metric_expiration after its
// last update, without sleeping.
func TestRenderLoopFollowsItsClock(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.RenderInterval = 2 * time.Second
	e, clock := onFakeClock(t, cfg)
	now := clock.Now()
	st := e.newSchedule(now)

	require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.GaugeBatch("temp", now, "a")))
	assert.Equal(t, e.renderSettle, e.step(now, st), "waits for ingest to pause")
	assert.Nil(t, e.snapshot.Load())
	clock.Advance(e.renderSettle)
	now = clock.Now()
	assert.Zero(t, e.step(now, st))
	require.NotNil(t, e.snapshot.Load())
	first := hold(t, e)
	assert.Contains(t, textOf(t, first), `temp{`)

	clock.Advance(time.Second)
	now = clock.Now()
	require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.GaugeBatch("temp", now, "b")))
	assert.Zero(t, e.step(now, st), "the pause after a render is the ticker's to end")
	assert.Same(t, first, e.snapshot.Load(), "within render_interval of the last render")
	clock.Advance(time.Second)
	now = clock.Now()
	e.step(now, st)
	assert.Contains(t, textOf(t, hold(t, e)), `k="b"`)

	// "a" was updated at promtest.TestBase, "b" 1.5 s later: at promtest.TestBase+5m+1s the
	// sweep removes "a" only; later it removes "b".
	clock.Advance(cfg.MetricExpiration - 1500*time.Millisecond)
	now = clock.Now()
	e.step(now, st)
	out := textOf(t, hold(t, e))
	assert.NotContains(t, out, `k="a"`)
	assert.Contains(t, out, `k="b"`)
	clock.Advance(time.Minute)
	now = clock.Now()
	e.step(now, st)
	assert.Zero(t, e.store.Sizes().Rows)
	assert.Empty(t, textOf(t, hold(t, e)))
}

// TestRenderWaitsForTheWholeFlush: a flush arriving as many calls in a row
// is rendered once, after the last call, not once per part; input that
// never pauses is still rendered renderMaxDelay after its first change.
func TestRenderWaitsForTheWholeFlush(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	e, clock := onFakeClock(t, cfg)
	st := e.newSchedule(clock.Now())
	gap := e.renderSettle / 4

	for part := range 8 {
		require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.GaugeBatch("temp", clock.Now(), strconv.Itoa(part))))
		assert.Equal(t, e.renderSettle, e.step(clock.Now(), st), "part %d", part)
		clock.Advance(gap)
	}
	assert.Nil(t, e.snapshot.Load(), "nothing rendered while the parts arrive")
	assert.Equal(t, e.renderSettle-gap, e.step(clock.Now(), st))
	clock.Advance(e.renderSettle - gap)
	e.step(clock.Now(), st)
	require.NotNil(t, e.snapshot.Load())
	assert.Equal(t, 8, strings.Count(textOf(t, hold(t, e)), "temp{"), "the whole flush in one render")

	// Parts that never pause: rendered at the latest renderMaxDelay after
	// the first one no snapshot shows.
	rendered := hold(t, e)
	clock.Advance(2 * cfg.RenderInterval) // past the pause after the render
	began := clock.Now()
	for i := 0; e.snapshot.Load() == rendered; i++ {
		require.Less(t, clock.Since(began), e.renderMaxDelay+gap, "input that never pauses is never rendered")
		require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.GaugeBatch("temp", clock.Now(), "busy"+strconv.Itoa(i))))
		e.step(clock.Now(), st)
		clock.Advance(gap)
	}
	assert.GreaterOrEqual(t, clock.Since(began), e.renderMaxDelay)
}

// TestRenderLoopWakesWhenIngestPaused: the running loop renders once ingest
// has paused renderSettle, on its own timer, not at the next render_interval
// tick.
func TestRenderLoopWakesWhenIngestPaused(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.NetAddr.Endpoint = promtest.FreeEndpoint(t)
	e, clock := onFakeClock(t, cfg)
	require.NoError(t, e.Start(context.Background(), componenttest.NewNopHost()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, clock.BlockUntilContext(ctx, 2), "the ticker and the settle timer")

	began := clock.Now()
	require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.GaugeBatch("temp", began, "a")))
	const step = 10 * time.Millisecond
	for e.snapshot.Load() == nil {
		require.Less(t, clock.Since(began), cfg.RenderInterval, "not rendered before the tick")
		time.Sleep(time.Millisecond) // the loop takes the wake-up on a real goroutine
		clock.Advance(step)
	}
	assert.GreaterOrEqual(t, clock.Since(began), e.renderSettle)
	assert.Contains(t, textOf(t, hold(t, e)), `temp{`)
}
