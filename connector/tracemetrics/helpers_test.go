package tracemetrics

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/open-telemetry/opentelemetry-collector-contrib/connector/spanmetricsconnector"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/aggregate"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/metadata"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

var testStart = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// running is a started connector (ours or spanmetrics) on a fake clock with a sink.
type running struct {
	t        testing.TB
	conn     connector.Traces
	sink     *consumertest.MetricsSink
	clock    *clockwork.FakeClock
	interval time.Duration
}

// startConnector builds a connector from a factory and a configuration given as YAML-like
// map, exactly as the collector would unmarshal it.
func startConnector(t testing.TB, f connector.Factory, raw map[string]any) *running {
	t.Helper()
	return startConnectorTo(t, f, raw, nil)
}

// startConnectorTo is startConnector with the sink behind wrap, when not nil.
func startConnectorTo(t testing.TB, f connector.Factory, raw map[string]any, wrap func(*consumertest.MetricsSink) consumer.Metrics) *running {
	t.Helper()
	cfg := f.CreateDefaultConfig()
	require.NoError(t, confmap.NewFromStringMap(raw).Unmarshal(cfg))
	if v, ok := cfg.(interface{ Validate() error }); ok {
		require.NoError(t, v.Validate())
	}
	clock := clockwork.NewFakeClockAt(testStart)
	ctx := clockwork.AddToContext(context.Background(), clock)
	sink := new(consumertest.MetricsSink)
	var next consumer.Metrics = sink
	if wrap != nil {
		next = wrap(sink)
	}
	conn, err := f.CreateTracesToMetrics(ctx, testSettings(f), cfg, next)
	require.NoError(t, err)
	require.NoError(t, conn.Start(ctx, componenttestHost{}))
	interval := 60 * time.Second
	if v, ok := raw["metrics_flush_interval"]; ok {
		interval = v.(time.Duration)
	}
	r := &running{t: t, conn: conn, sink: sink, clock: clock, interval: interval}
	t.Cleanup(func() { _ = conn.Shutdown(context.Background()) })
	return r
}

// testInstanceID is the collector.instance.id of the collector the tests' connectors run in:
// both connectors take it from the collector's resource (a random one without it), and
// spanmetrics labels every series with it by default since v0.165.1.
const testInstanceID = "0b5e3d1a-7c2f-4e58-9a31-6f0d2c8b4e17"

// testSettings are the settings of a connector built by f in a collector whose resource has
// collector.instance.id testInstanceID.
func testSettings(f connector.Factory) connector.Settings {
	set := connectortest.NewNopSettings(f.Type())
	set.Resource.Attributes().PutStr(series.CollectorInstanceKey, testInstanceID)
	return set
}

type componenttestHost struct{}

func (componenttestHost) GetExtensions() map[component.ID]component.Component { return nil }

func (r *running) consume(td ptrace.Traces) {
	require.NoError(r.t, r.conn.ConsumeTraces(context.Background(), td))
}

// flush advances the clock one interval and waits for the export it triggers.
func (r *running) flush() pmetric.Metrics {
	n := len(r.sink.AllMetrics())
	ours, isOurs := r.conn.(*connectorImp)
	var flushes int64
	if isOurs {
		// A tick that finds the flusher still busy is skipped (by design); wait until idle.
		require.Eventually(r.t, ours.flusherIdle, 10*time.Second, time.Millisecond)
		flushes = ours.tel.Flushes.Load()
	}
	// Ticker registration is asynchronous in spanmetrics' Start; wait for a waiter.
	require.NoError(r.t, r.clock.BlockUntilContext(context.Background(), 1))
	r.clock.Advance(r.interval)
	// Generous: a flush of 1M series takes seconds on a loaded 2-core machine.
	if isOurs {
		// tracemetrics sends a flush in chunks: wait until the last one is out.
		require.Eventually(r.t, func() bool { return ours.tel.Flushes.Load() > flushes }, 2*time.Minute, time.Millisecond)
	} else {
		require.Eventually(r.t, func() bool { return len(r.sink.AllMetrics()) > n }, 2*time.Minute, time.Millisecond)
	}
	return mergeMetrics(r.sink.AllMetrics()[n:])
}

// mergeMetrics returns the resource metrics of several exports (the chunks of one flush) as
// one export.
func mergeMetrics(mds []pmetric.Metrics) pmetric.Metrics {
	out := pmetric.NewMetrics()
	for _, md := range mds {
		for i := 0; i < md.ResourceMetrics().Len(); i++ {
			md.ResourceMetrics().At(i).CopyTo(out.ResourceMetrics().AppendEmpty())
		}
	}
	return out
}

// point is a data point reduced to what must match between the two connectors.
type point struct {
	Int       int64
	Count     uint64
	Sum       float64
	Bounds    []float64
	Buckets   []uint64
	Scale     int32
	Zero      uint64
	PosOffset int32
	Pos       []uint64
	Min, Max  float64
	Exemplars []string
	Start     pcommon.Timestamp
}

func attrString(m pcommon.Map) string {
	parts := make([]string, 0, m.Len())
	for k, v := range m.All() {
		parts = append(parts, fmt.Sprintf("%s=%s:%q", k, v.Type(), v.AsString()))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// points flattens metrics into resource|metric|attributes → point.
func points(t testing.TB, md pmetric.Metrics, withStart bool) map[string]point {
	out := map[string]point{}
	add := func(key string, p point) {
		_, dup := out[key]
		require.False(t, dup, "duplicate data point %s", key)
		out[key] = p
	}
	exemplars := func(es pmetric.ExemplarSlice) []string {
		var ids []string
		for i := 0; i < es.Len(); i++ {
			e := es.At(i)
			ids = append(ids, fmt.Sprintf("%s/%s/%g", e.TraceID(), e.SpanID(), e.DoubleValue()))
		}
		sort.Strings(ids)
		return ids
	}
	for i := 0; i < md.ResourceMetrics().Len(); i++ {
		rm := md.ResourceMetrics().At(i)
		res := attrString(rm.Resource().Attributes())
		for j := 0; j < rm.ScopeMetrics().Len(); j++ {
			ms := rm.ScopeMetrics().At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				prefix := res + "|" + m.Name() + "|" + m.Unit() + "|" + m.Type().String() + "|"
				switch m.Type() {
				case pmetric.MetricTypeSum:
					require.True(t, m.Sum().IsMonotonic())
					prefix += m.Sum().AggregationTemporality().String() + "|"
					for d := 0; d < m.Sum().DataPoints().Len(); d++ {
						dp := m.Sum().DataPoints().At(d)
						p := point{Int: dp.IntValue(), Exemplars: exemplars(dp.Exemplars())}
						if withStart {
							p.Start = dp.StartTimestamp()
						}
						add(prefix+attrString(dp.Attributes()), p)
					}
				case pmetric.MetricTypeHistogram:
					prefix += m.Histogram().AggregationTemporality().String() + "|"
					for d := 0; d < m.Histogram().DataPoints().Len(); d++ {
						dp := m.Histogram().DataPoints().At(d)
						p := point{Count: dp.Count(), Sum: dp.Sum(), Bounds: dp.ExplicitBounds().AsRaw(),
							Buckets: dp.BucketCounts().AsRaw(), Exemplars: exemplars(dp.Exemplars())}
						require.False(t, dp.HasMin())
						if withStart {
							p.Start = dp.StartTimestamp()
						}
						add(prefix+attrString(dp.Attributes()), p)
					}
				case pmetric.MetricTypeExponentialHistogram:
					prefix += m.ExponentialHistogram().AggregationTemporality().String() + "|"
					for d := 0; d < m.ExponentialHistogram().DataPoints().Len(); d++ {
						dp := m.ExponentialHistogram().DataPoints().At(d)
						require.Zero(t, dp.Negative().BucketCounts().Len())
						p := point{Count: dp.Count(), Sum: dp.Sum(), Scale: dp.Scale(), Zero: dp.ZeroCount(),
							PosOffset: dp.Positive().Offset(), Pos: dp.Positive().BucketCounts().AsRaw(),
							Min: dp.Min(), Max: dp.Max(), Exemplars: exemplars(dp.Exemplars())}
						if p.Count == 0 || len(p.Pos) == 0 {
							p.PosOffset = 0 // meaningless without buckets
						}
						if withStart {
							p.Start = dp.StartTimestamp()
						}
						add(prefix+attrString(dp.Attributes()), p)
					}
				default:
					t.Fatalf("unexpected metric type %v", m.Type())
				}
			}
		}
	}
	return out
}

// requireSamePoints asserts equal data points; sums may differ in the last bits because the
// two connectors add the same durations in a different order.
func requireSamePoints(t testing.TB, want, got map[string]point) {
	t.Helper()
	var missing, extra []string
	for k := range want {
		if _, ok := got[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	require.Empty(t, missing, "data points of spanmetrics missing from tracemetrics")
	require.Empty(t, extra, "data points of tracemetrics that spanmetrics does not have")
	for k, w := range want {
		g := got[k]
		require.InEpsilon(t, w.Sum+1, g.Sum+1, 1e-9, "sum of %s", k)
		w.Sum, g.Sum = 0, 0
		require.Equal(t, w, g, "data point %s", k)
	}
}

// genOptions shape generated traces.
type genOptions struct {
	services int
	names    int
	bad      bool // include malformed input
	mixed    bool // dimension values of several types with the same string form
	events   bool
	wide     bool // durations from 1µs to hours (exponential downscaling)
	// globs adds attributes for glob dimensions: k8s.<x>.name on resources, spans (overriding
	// the resource's with values of their own) and events, db.* on spans, exception.* on
	// events. A key found in two places never has the same value in both: spanmetrics keys a
	// series by the order it visits matches in, which depends on where each key was found,
	// and would make two series of one attribute set.
	globs bool
	// sampled gives spans W3C tracestates: none, power-of-two thresholds (integer adjusted
	// counts, exact in both connectors), th:0, thresholds with consistent randomness, other
	// vendors' members, and thresholds that are malformed or absent (count 1).
	sampled bool
}

// sampledTraceStates are the tracestates genOptions.sampled draws from.
var sampledTraceStates = []string{
	"", "", "ot=th:0", "vendor=a, ot=th:8;x:y", "ot=th:c", "ot=th:e;rv:ffffffffffffff",
	"congo=t61rcWkgMzE,ot=th:f", "ot=th:8;rv:fe123456789abc", "ot=th:zz", "ot=rv:12345678901234",
	"ot=th:", "vendor=b",
}

// genTraces returns spans in a few ResourceSpans. Everything is derived from r, so two calls
// with equally seeded generators return identical traces.
func genTraces(r *rand.Rand, spans int, o genOptions) ptrace.Traces {
	td := ptrace.NewTraces()
	base := pcommon.NewTimestampFromTime(testStart.Add(-time.Minute))
	for spans > 0 {
		rs := td.ResourceSpans().AppendEmpty()
		svc := r.IntN(o.services)
		attrs := rs.Resource().Attributes()
		attrs.PutStr("host.name", fmt.Sprintf("host-%d", svc%3))
		if svc%2 == 0 {
			attrs.PutStr("region", "eu")
		}
		attrs.PutStr(series.ServiceNameKey, fmt.Sprintf("svc-%d", svc))
		if o.globs {
			attrs.PutStr("k8s.pod.name", fmt.Sprintf("pod-%d", svc))
			attrs.PutStr("k8s.namespace.name", fmt.Sprintf("ns-%d", svc%2))
			attrs.PutStr("k8s.cluster.label.name", "not matched by k8s.*.name")
		}
		if o.bad {
			switch r.IntN(10) {
			case 0:
				attrs.Remove(series.ServiceNameKey) // skipped by both
			case 1:
				attrs.PutInt(series.ServiceNameKey, int64(svc)) // not a string: service.name ""
			case 2:
				attrs.PutStr(series.ServiceNameKey, "svc-\xff\xfe") // invalid UTF-8
			}
		}
		n := min(spans, 1+r.IntN(40))
		spans -= n
		scopes := map[int]ptrace.ScopeSpans{}
		for i := 0; i < n; i++ {
			name := r.IntN(o.names)
			// One scope per span name: spanmetrics does not key series by scope.
			ss, ok := scopes[name%2]
			if !ok {
				ss = rs.ScopeSpans().AppendEmpty()
				ss.Scope().SetName(fmt.Sprintf("lib-%d", name%2))
				ss.Scope().SetVersion("1.0")
				scopes[name%2] = ss
			}
			sp := ss.Spans().AppendEmpty()
			sp.SetName(fmt.Sprintf("op-%d", name))
			sp.SetKind(ptrace.SpanKind(r.IntN(6)))
			sp.Status().SetCode(ptrace.StatusCode(r.IntN(3)))
			var tid pcommon.TraceID
			var sid pcommon.SpanID
			for b := range tid {
				tid[b] = byte(r.Uint32())
			}
			for b := range sid {
				sid[b] = byte(r.Uint32())
			}
			sp.SetTraceID(tid)
			sp.SetSpanID(sid)
			start := base + pcommon.Timestamp(r.IntN(1_000_000_000))
			var dur float64
			if o.wide {
				dur = math.Exp(r.Float64() * math.Log(1e13)) // 1ns .. 3h
			} else {
				dur = math.Exp(r.NormFloat64()*1.5 + math.Log(30e6)) // ~30ms
			}
			if r.IntN(50) == 0 {
				dur = 0
			}
			sp.SetStartTimestamp(start)
			sp.SetEndTimestamp(start + pcommon.Timestamp(dur))
			sp.Attributes().PutStr("http.method", []string{"GET", "POST"}[r.IntN(2)])
			if r.IntN(3) > 0 {
				code := []int64{200, 404, 500}[r.IntN(3)]
				if o.mixed && r.IntN(2) == 0 {
					sp.Attributes().PutStr("http.status_code", fmt.Sprint(code))
				} else {
					sp.Attributes().PutInt("http.status_code", code)
				}
			}
			if o.mixed {
				switch r.IntN(6) {
				case 0:
					sp.Attributes().PutDouble("ratio", []float64{0.5, 1e21, 1e-7, -3}[r.IntN(4)])
				case 1:
					sp.Attributes().PutStr("ratio", []string{"0.5", "1e+21", "1e-7", "-3"}[r.IntN(4)])
				case 2:
					sp.Attributes().PutBool("ratio", r.IntN(2) == 0)
				case 3:
					sp.Attributes().PutStr("ratio", []string{"true", "false"}[r.IntN(2)])
				case 4:
					sp.Attributes().PutEmpty("ratio")
				}
			}
			if r.IntN(4) == 0 {
				sp.Attributes().PutStr("tenant", fmt.Sprintf("t%d", r.IntN(3)))
			}
			if o.bad {
				switch r.IntN(12) {
				case 0:
					sp.SetEndTimestamp(start - 5) // end before start: duration 0
				case 1:
					sp.SetName("")
				case 2:
					sp.SetName("op-\xc3\x28") // invalid UTF-8
				case 3:
					sp.Attributes().PutStr("tenant", strings.Repeat("x", 70_000)) // huge value
				case 4:
					sp.SetKind(ptrace.SpanKind(42))
					sp.Status().SetCode(ptrace.StatusCode(7))
				case 5:
					sp.SetTraceID(pcommon.TraceID{}) // no exemplar
				case 6:
					sp.SetStartTimestamp(0)
					sp.SetEndTimestamp(0)
				}
			}
			if o.globs {
				a := sp.Attributes()
				if r.IntN(3) == 0 {
					a.PutStr("k8s.pod.name", fmt.Sprintf("span-pod-%d", r.IntN(2)))
				}
				if r.IntN(4) == 0 {
					a.PutStr("k8s.container.name", "app")
				}
				if r.IntN(2) == 0 {
					a.PutStr("db.system", []string{"redis", "postgresql"}[r.IntN(2)])
				}
				if r.IntN(3) == 0 {
					a.PutStr("db.operation.name", []string{"GET", "SELECT"}[r.IntN(2)])
				}
				if o.mixed && r.IntN(2) == 0 {
					if r.IntN(2) == 0 {
						a.PutInt("k8s.shard.name", 3)
					} else {
						a.PutStr("k8s.shard.name", "3")
					}
				}
			}
			if o.sampled {
				sp.TraceState().FromRaw(sampledTraceStates[r.IntN(len(sampledTraceStates))])
			}
			if o.events {
				for e := r.IntN(3); e > 0; e-- {
					ev := sp.Events().AppendEmpty()
					ev.SetName("exception")
					ev.Attributes().PutStr("exception.type", []string{"Timeout", "NPE"}[r.IntN(2)])
					if o.globs {
						if r.IntN(2) == 0 {
							ev.Attributes().PutBool("exception.escaped", r.IntN(2) == 0)
						}
						if r.IntN(4) == 0 {
							ev.Attributes().PutStr("k8s.namespace.name", "event-ns")
						}
						if r.IntN(4) == 0 {
							ev.Attributes().PutStr("k8s.pod.name", "event-pod")
						}
					}
				}
			}
		}
	}
	return td
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x5eed)) }

// compareRun feeds identical traces to spanmetrics and tracemetrics with the same
// configuration and compares every flush.
func compareRun(t *testing.T, raw map[string]any, o genOptions, flushes, callsPerFlush, spansPerCall int, withStart bool) {
	t.Helper()
	compareRunWith(t, NewFactory(), raw, o, flushes, callsPerFlush, spansPerCall, withStart)
}

// compareRunWith is compareRun with ours built by the given factory.
func compareRunWith(t *testing.T, oursFactory connector.Factory, raw map[string]any, o genOptions, flushes, callsPerFlush, spansPerCall int, withStart bool) {
	t.Helper()
	stock := startConnector(t, spanmetricsconnector.NewFactory(), raw)
	ours := startConnector(t, oursFactory, raw)
	rStock, rOurs := newRand(7), newRand(7)
	cumulative := raw["aggregation_temporality"] == nil || raw["aggregation_temporality"] == "AGGREGATION_TEMPORALITY_CUMULATIVE"
	exported := map[string]pcommon.Timestamp{}
	for f := 0; f < flushes; f++ {
		for c := 0; c < callsPerFlush; c++ {
			stock.consume(genTraces(rStock, spansPerCall, o))
			ours.consume(genTraces(rOurs, spansPerCall, o))
		}
		want := points(t, stock.flush(), withStart)
		got := points(t, ours.flush(), withStart)
		require.NotEmpty(t, want)
		if cumulative {
			takeFirstCounts(t, want, got, exported)
		}
		requireSamePoints(t, want, got)
	}
	if cumulative {
		// One more flush without spans: spanmetrics now reports the real counts of the series
		// that were new at the last one, and every value must agree.
		want, got := points(t, stock.flush(), withStart), points(t, ours.flush(), withStart)
		require.NotEmpty(t, want)
		requireSamePoints(t, want, got)
	}
}

// takeFirstCounts accepts the one difference of cumulative output on purpose: spanmetrics
// exports a new series' calls as 0 at its first flush, tracemetrics exports its count. It
// checks both sides do what they mean to and takes ours as wanted; the next flush compares the
// counts themselves, as spanmetrics reports them from then on. exported holds the start time
// of each series seen: a series that disappears, or comes back with a new start time, has
// expired (series_expiration, metrics_expiration, the resource cache) and is new again.
func takeFirstCounts(t testing.TB, want, got map[string]point, exported map[string]pcommon.Timestamp) {
	t.Helper()
	for k := range exported {
		if _, ok := want[k]; !ok {
			delete(exported, k)
		}
	}
	for k, w := range want {
		if start, ok := exported[k]; ok && start == w.Start {
			continue
		}
		exported[k] = w.Start
		if !strings.Contains(k, "|Sum|Cumulative|") {
			continue
		}
		g, ok := got[k]
		if !ok {
			continue // requireSamePoints reports it
		}
		require.Zero(t, w.Int, "spanmetrics' first export of %s", k)
		require.Positive(t, g.Int, "tracemetrics' first export of %s must carry its count", k)
		w.Int = g.Int
		want[k] = w
	}
}

// globDim is a glob dimension entry.
func globDim(pattern string) map[string]any { return map[string]any{"glob": pattern} }

func dims(names ...string) []any {
	out := make([]any, 0, len(names))
	for _, n := range names {
		name, def, hasDef := strings.Cut(n, "=")
		d := map[string]any{"name": name}
		if hasDef {
			d["default"] = def
		}
		out = append(out, d)
	}
	return out
}

var _ = slices.Contains[[]string]

// flusherIdle reports whether the flusher has handed its buffer back, so the next tick will
// flush instead of being skipped.
func (c *connectorImp) flusherIdle() bool { return c.Idle() }

// settle returns once the aggregator has applied every batch queued before the call; no
// ConsumeTraces call may run meanwhile.
//
// The aggregator sleeps until the batch it armed for is queued (wakeItems), and the last calls
// of a test usually queue fewer; so settle completes that batch as any producer would, with
// empty batches that apply as nothing, and watches the ring's depth, which only a Drain lowers
// while settle is the only producer. Once fewer are queued than it has queued itself, a Drain
// has taken one of its empty batches, and so every batch before them. Once the depth falls
// again, a later Drain has happened: the aggregator (one goroutine) has applied the first
// one's round, and the ring's counter orders those writes before settle returns.
func (c *connectorImp) settle(tb testing.TB) {
	tb.Helper()
	puts := 0
	c.fillUntil(tb, func() bool { return puts > 0 && c.pipe.Queue.Len() < puts }, &puts)
	queued, more := c.pipe.Queue.Len(), 0
	c.fillUntil(tb, func() bool { return c.pipe.Queue.Len() < queued+more }, &more)
}

// fillUntil queues empty batches until done, counting them in puts: quickly up to the batch the
// aggregator computed at its last round from the hints (exact under a steady load), slowly up
// to the largest batch it can ask for (the hints may have changed since), then not at all.
func (c *connectorImp) fillUntil(tb testing.TB, done func() bool, puts *int) {
	tb.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	patience := time.Now().Add(2 * time.Millisecond)
	likely := max(aggregate.WakeCount(c.pipe.Queue.Cap(), int(c.hints.Get(series.HintSeries))), aggregate.WakeCount(c.pipe.Queue.Cap(), aggregate.FirstSeriesPerBatch))
	largest := aggregate.WakeCount(c.pipe.Queue.Cap(), 0)
	for !done() {
		require.True(tb, time.Now().Before(deadline), "the aggregator does not drain the ring")
		n := c.pipe.Queue.Len()
		if n < largest {
			require.NoError(tb, c.pipe.Queue.Put(context.Background(), c.emptyBatch(patience)))
			*puts++
		}
		if n < likely {
			runtime.Gosched()
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// emptyBatch takes a batch from the free list. A new batch would join the pool, producers
// would grow it and benchmarks would count that; so when the list is empty it waits until
// patience for the aggregator to hand batches back, and only then makes new ones (the pool is
// smaller than the aggregator's batch in small tests).
func (c *connectorImp) emptyBatch(patience time.Time) *series.Batch {
	for {
		if b := c.pipe.Free.Get(); b != nil {
			return b
		}
		if time.Now().After(patience) {
			return new(series.Batch)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// oursWith is the tracemetrics factory with what the constructor is handed changed by mod
// (smaller chunks, a colliding hash); the clock still comes from the context.
func oursWith(mod func(*deps)) connector.Factory {
	return connector.NewFactory(metadata.Type, createDefaultConfig,
		connector.WithTracesToMetrics(func(ctx context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Traces, error) {
			d := newDeps(ctx)
			mod(&d)
			return newConnector(set.TelemetrySettings, cfg.(*Config), next, d, instanceIDOf(set))
		}, metadata.TracesToMetricsStability))
}
