package aggregate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/flush"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/reduce"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/telemetry"
	"github.com/otelcol-red/otelcol-red/internal/buckets"
	"github.com/otelcol-red/otelcol-red/internal/hash"
	"github.com/otelcol-red/otelcol-red/internal/intake"
	"github.com/otelcol-red/otelcol-red/internal/pipeline"
)

var testStart = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// callsName is the calls metric of testPlan.
const callsName = "traces.span.metrics.calls"

// testPlan is the plan of the connector's default configuration (spanmetrics' attributes,
// explicit buckets in ms, cumulative, cap_selection by traffic, no cap), changed by mod: what
// the connector's plan.go derives, written out.
func testPlan(mod func(*series.Plan)) *series.Plan {
	bounds := []float64{2, 4, 6, 8, 10, 50, 100, 200, 400, 800, 1000, 1400, 2000, 5000, 10_000, 15_000}
	f := &series.Family{Calls: true, Duration: true}
	p := &series.Plan{
		Layout: series.Layout{WithService: true, WithName: true, WithKind: true, WithStatus: true,
			Families: []*series.Family{f}, CallsFamily: 0, DurationFamily: 0, EventsFamily: -1},
		UnitNanos: 1e6, Bounds: bounds, Explicit: buckets.NewExplicit(bounds), NB: len(bounds) + 1,
		ResourceCacheSize: 1000, ByTraffic: true, SelectionBytes: 16 << 20,
		RingSize: 1024, RingBytes: 64 << 20, FlushInterval: time.Minute,
		CallsName: callsName, DurationName: "traces.span.metrics.duration", EventsName: "traces.span.metrics.events",
		Unit: "ms", CopyResource: true,
	}
	if mod != nil {
		mod(p)
	}
	return p
}

// engine is the data path of a connector with plan p, the stages wired as the connector wires
// them, on a fake clock, its output in sink.
type engine struct {
	*pipeline.Stage[series.Batch, *series.DeltaBuffer]
	p     *series.Plan
	agg   *Aggregator
	red   *reduce.Reducer
	pipe  *intake.Pipe[series.Batch]
	hints *intake.SizeHints
	tel   *telemetry.Telemetry
	clock *clockwork.FakeClock
	sink  *consumertest.MetricsSink
}

func newEngine(t testing.TB, p *series.Plan) *engine {
	e := &engine{p: p, clock: clockwork.NewFakeClockAt(testStart), sink: new(consumertest.MetricsSink)}
	e.pipe = intake.NewPipe(p.RingSize, p.RingBytes, series.Batches)
	var err error
	e.tel, err = telemetry.New(componenttest.NewNopTelemetrySettings(), e.pipe.Queue, p, nil)
	require.NoError(t, err)
	e.hints = intake.NewSizeHints(series.NumHints, series.HintLimit)
	e.red = reduce.New(p, hash.Sum64, nil, reduce.NewWeighting(true, ""), reduce.Filtering{}, e.hints)
	e.agg = New(p, hash.Sum64, e.clock, e.hints, e.pipe.Queue.Cap(), e.tel, nil)
	clock := e.clock
	e.Stage = pipeline.New(pipeline.Settings[series.Batch, *series.DeltaBuffer]{
		Pipe: e.pipe,
		Reduce: func(b *series.Batch, td ptrace.Traces) {
			b.TS = clock.Now().UnixNano()
			e.red.Reduce(b, td)
		},
		Consumer: e.agg, Flusher: flush.New(p, e.sink, zap.NewNop(), e.tel, flush.ChunkDataPoints),
		Spare: series.NewDeltaBuffer(len(p.Families)), Clock: clock, FlushInterval: p.FlushInterval,
		ErrShutdown: fmt.Errorf("shut down"), Refused: &e.tel.RefusedSpans, Postponed: &e.tel.FlushesSkipped,
	})
	require.NoError(t, e.Start(context.Background(), nil))
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e
}

func (e *engine) consume(t testing.TB, tds ...ptrace.Traces) {
	for _, td := range tds {
		require.NoError(t, e.ConsumeTraces(context.Background(), td))
	}
}

// flush settles, advances the clock one interval and returns what the flush sent.
func (e *engine) flush(t testing.TB) pmetric.Metrics {
	n := len(e.sink.AllMetrics())
	e.settle(t)
	require.Eventually(t, e.Idle, 5*time.Second, time.Millisecond)
	flushes := e.tel.Flushes.Load()
	e.clock.Advance(e.p.FlushInterval)
	require.Eventually(t, func() bool { return e.tel.Flushes.Load() > flushes }, time.Minute, time.Millisecond)
	out := pmetric.NewMetrics()
	for _, md := range e.sink.AllMetrics()[n:] {
		md.ResourceMetrics().MoveAndAppendTo(out.ResourceMetrics())
	}
	return out
}

// settle returns once the aggregator has applied every batch queued before the call: it
// completes the aggregator's wake count with empty batches and waits until a later drain has
// taken them (the connector's settle has the reasoning).
func (e *engine) settle(t testing.TB) {
	wait := func(done func() bool, puts *int) {
		deadline := time.Now().Add(time.Minute)
		for !done() {
			require.True(t, time.Now().Before(deadline), "the aggregator does not drain the ring")
			if e.pipe.Queue.Len() < WakeCount(e.pipe.Queue.Cap(), 0) {
				b := e.pipe.Free.Get()
				if b == nil {
					b = new(series.Batch)
				}
				require.NoError(t, e.pipe.Queue.Put(context.Background(), b))
				*puts++
			}
			runtime.Gosched()
			time.Sleep(50 * time.Microsecond)
		}
	}
	puts := 0
	wait(func() bool { return puts > 0 && e.pipe.Queue.Len() < puts }, &puts)
	queued, more := e.pipe.Queue.Len(), 0
	wait(func() bool { return e.pipe.Queue.Len() < queued+more }, &more)
}

// calls adds up the calls of an export, and counts its calls data points.
func calls(md pmetric.Metrics) (n int64, points int) {
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Name() == callsName {
					for _, dp := range m.Sum().DataPoints().All() {
						n += dp.IntValue()
						points++
					}
				}
			}
		}
	}
	return n, points
}

// oneSpan returns a request of one span of service named name.
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

// benchInput returns requests of batch spans over nSeries series in 10 services (the
// connector's benchmarks' input), every series at least once.
func benchInput(nSeries, batch int) []ptrace.Traces {
	r := rand.New(rand.NewPCG(1, uint64(nSeries)))
	order := r.Perm(nSeries)
	base := pcommon.NewTimestampFromTime(testStart.Add(-time.Minute))
	var out []ptrace.Traces
	for i := 0; i < len(order); i += batch {
		td := ptrace.NewTraces()
		byService := map[int]ptrace.SpanSlice{}
		for _, s := range order[i:min(i+batch, len(order))] {
			svc := s % 10
			spans, ok := byService[svc]
			if !ok {
				rs := td.ResourceSpans().AppendEmpty()
				rs.Resource().Attributes().PutStr(series.ServiceNameKey, fmt.Sprintf("service-%d", svc))
				spans = rs.ScopeSpans().AppendEmpty().Spans()
				byService[svc] = spans
			}
			sp := spans.AppendEmpty()
			sp.SetName(fmt.Sprintf("GET /api/v1/resource/%d", s/10))
			sp.SetKind(ptrace.SpanKindServer)
			start := base + pcommon.Timestamp(r.IntN(1e9))
			sp.SetStartTimestamp(start)
			sp.SetEndTimestamp(start + pcommon.Timestamp(r.ExpFloat64()*20e6))
		}
		out = append(out, td)
	}
	return out
}

// applied is an aggregator of plan p, driven by hand (no goroutine), with every batch of input
// reduced and applied once: every series exists. It returns the reduced batches.
func applied(tb testing.TB, p *series.Plan, input []ptrace.Traces) (*Aggregator, []*series.Batch) {
	pipe := intake.NewPipe(p.RingSize, p.RingBytes, series.Batches)
	tel, err := telemetry.New(componenttest.NewNopTelemetrySettings(), pipe.Queue, p, nil)
	require.NoError(tb, err)
	hints := intake.NewSizeHints(series.NumHints, series.HintLimit)
	red := reduce.New(p, hash.Sum64, nil, reduce.NewWeighting(true, ""), reduce.Filtering{}, hints)
	clock := clockwork.NewFakeClockAt(testStart)
	a := New(p, hash.Sum64, clock, hints, pipe.Queue.Cap(), tel, nil)
	batches := make([]*series.Batch, len(input))
	for i, td := range input {
		batches[i] = new(series.Batch)
		batches[i].TS = clock.Now().UnixNano()
		red.Reduce(batches[i], td)
		a.apply(batches[i])
	}
	return a, batches
}
