package tracemetrics

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/connector/spanmetricsconnector"
	contribsampling "github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/metadata"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// thresholds by integer adjusted count: th:0 is p=1, th:8 p=1/2, th:c 1/4, th:e 1/8, th:f 1/16.
var thresholds = map[int]string{1: "th:0", 2: "th:8", 4: "th:c", 8: "th:e", 16: "th:f"}

// forEachSpan calls f with every span of td and its position, the same for copies of td.
func forEachSpan(td ptrace.Traces, f func(i int, ss ptrace.ScopeSpans, k int)) {
	i := 0
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			n := ss.Spans().Len()
			for k := 0; k < n; k++ {
				f(i, ss, k)
				i++
			}
		}
	}
}

// weighAndReplicate returns td with an integer adjusted count in each span's tracestate, and
// td with each span repeated that many times instead: what the weights stand for.
func weighAndReplicate(td ptrace.Traces, rnd *rand.Rand) (weighted, replicated ptrace.Traces) {
	weighted, replicated = ptrace.NewTraces(), ptrace.NewTraces()
	td.CopyTo(weighted)
	td.CopyTo(replicated)
	var ws []int
	forEachSpan(weighted, func(_ int, ss ptrace.ScopeSpans, k int) {
		w := []int{1, 2, 4, 8, 16}[rnd.IntN(5)]
		ws = append(ws, w)
		if w > 1 || rnd.IntN(2) == 0 {
			ss.Spans().At(k).TraceState().FromRaw("vendor=a, ot=" + thresholds[w] + ";x:y")
		}
	})
	forEachSpan(replicated, func(i int, ss ptrace.ScopeSpans, k int) {
		for range ws[i] - 1 {
			ss.Spans().At(k).CopyTo(ss.Spans().AppendEmpty())
		}
	})
	return weighted, replicated
}

// A span with adjusted count n counts exactly as n copies of it: calls, errors (status code
// series), histogram buckets, counts and sums, events; delta and cumulative, explicit and
// exponential histograms, calls split from durations by calls_dimensions.
func TestWeightedSpansCountAsTheirCopies(t *testing.T) {
	for name, raw := range map[string]map[string]any{
		"cumulative explicit": {"dimensions": dims("http.method")},
		"delta exponential events": {
			"aggregation_temporality": "AGGREGATION_TEMPORALITY_DELTA",
			"histogram":               map[string]any{"exponential": map[string]any{"max_size": 40}},
			"events":                  map[string]any{"enabled": true, "dimensions": dims("exception.type")},
		},
		"cumulative no histogram": {"histogram": map[string]any{"disable": true}},
		"delta calls_dimensions": {
			"aggregation_temporality": "AGGREGATION_TEMPORALITY_DELTA",
			"calls_dimensions":        dims("http.status_code"),
		},
	} {
		t.Run(name, func(t *testing.T) {
			weighted := startConnector(t, NewFactory(), raw)
			replicated := startConnector(t, NewFactory(), raw)
			rnd, wrnd := newRand(11), newRand(12)
			for f := 0; f < 3; f++ {
				for c := 0; c < 5; c++ {
					w, r := weighAndReplicate(genTraces(rnd, 300, genOptions{services: 3, names: 4, events: true}), wrnd)
					weighted.consume(w)
					replicated.consume(r)
				}
				want := points(t, settledFlush(t, replicated), false)
				got := points(t, settledFlush(t, weighted), false)
				require.NotEmpty(t, want)
				requireSamePoints(t, want, got)
			}
			require.Zero(t, weighted.conn.(*connectorImp).tel.InvalidWeights.Load())
		})
	}
}

// probabilitySpans returns n spans of service svc in names series, each with attribute
// sampling.probability p, durations between 1 and 1000 ms.
func probabilitySpans(rnd *rand.Rand, n, names int, p float64) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(series.ServiceNameKey, "svc")
	ss := rs.ScopeSpans().AppendEmpty()
	base := pcommon.NewTimestampFromTime(testStart)
	for range n {
		sp := ss.Spans().AppendEmpty()
		sp.SetName(fmt.Sprintf("op-%d", rnd.IntN(names)))
		sp.SetStartTimestamp(base)
		sp.SetEndTimestamp(base + pcommon.Timestamp(1+rnd.IntN(1000))*pcommon.Timestamp(time.Millisecond))
		sp.Attributes().PutDouble("sampling.probability", p)
	}
	return td
}

// seriesTotals sums, per calls series (span name), the calls, and checks per point that the
// histogram's count is the calls and its buckets' sum.
func seriesTotals(t *testing.T, md pmetric.Metrics, totals map[string]int64) {
	t.Helper()
	calls := map[string]int64{}
	counts := map[string]uint64{}
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				switch m.Type() {
				case pmetric.MetricTypeSum:
					for _, dp := range m.Sum().DataPoints().All() {
						name, _ := dp.Attributes().Get(series.SpanNameKey)
						calls[name.Str()] = dp.IntValue()
					}
				case pmetric.MetricTypeHistogram:
					for _, dp := range m.Histogram().DataPoints().All() {
						name, _ := dp.Attributes().Get(series.SpanNameKey)
						var sum uint64
						for _, b := range dp.BucketCounts().All() {
							sum += b
						}
						require.Equal(t, dp.Count(), sum, "buckets of %s", name.Str())
						counts[name.Str()] = dp.Count()
					}
				}
			}
		}
	}
	require.NotEmpty(t, calls, "%d points, %d resources", md.DataPointCount(), md.ResourceMetrics().Len())
	for name, c := range calls {
		require.Equal(t, uint64(c), counts[name], "histogram count of %s", name)
		totals[name] += c
	}
}

// Weighted totals are exact for integer adjusted counts and within 1 of the exact weighted
// total otherwise, per series, however the spans are spread over calls and flush intervals:
// the remainder is carried per series, not per batch or interval.
func TestWeightedTotals(t *testing.T) {
	for _, tc := range []struct {
		p     float64
		exact bool
	}{{0.1, true}, {0.3, false}, {0.5, true}, {0.77, false}} {
		for _, temporality := range []string{"AGGREGATION_TEMPORALITY_DELTA", "AGGREGATION_TEMPORALITY_CUMULATIVE"} {
			t.Run(fmt.Sprintf("%v %s", tc.p, temporality), func(t *testing.T) {
				r := startConnector(t, NewFactory(), map[string]any{
					"aggregation_temporality": temporality,
					"sampling":                map[string]any{"attribute": "sampling.probability"},
				})
				rnd := newRand(5)
				spans := map[string]int{}
				totals := map[string]int64{}
				const flushes, calls = 10, 100 // 10,000 spans
				for range flushes {
					for range calls {
						// Mostly 1 span per series per call: rounding per batch would drift.
						td := probabilitySpans(rnd, 10, 7, tc.p)
						forEachSpan(td, func(_ int, ss ptrace.ScopeSpans, k int) { spans[ss.Spans().At(k).Name()]++ })
						r.consume(td)
					}
					md := settledFlush(t, r)
					if temporality == "AGGREGATION_TEMPORALITY_CUMULATIVE" {
						clear(totals)
					}
					seriesTotals(t, md, totals)
				}
				var all int64
				for name, n := range spans {
					exact := float64(n) * (1 / tc.p)
					got := float64(totals[name])
					if tc.exact {
						require.Equal(t, exact, got, name)
					} else {
						require.Greater(t, got, exact-1, name)
						require.LessOrEqual(t, got, exact+1e-6, name)
					}
					all += totals[name]
				}
				if tc.p == 0.1 {
					require.Equal(t, int64(100000), all)
				}
			})
		}
	}
}

// A threshold whose adjusted count is no integer (th:e666, p = 0x199a/2^16, as a sampler
// configured for 10% writes it with 4 digits) adds up within 1 of the exact total.
func TestWeightedTotalsNonIntegerThreshold(t *testing.T) {
	r := startConnector(t, NewFactory(), map[string]any{"aggregation_temporality": "AGGREGATION_TEMPORALITY_DELTA"})
	rnd := newRand(6)
	spans := map[string]int{}
	totals := map[string]int64{}
	for range 5 {
		for range 200 {
			td := probabilitySpans(rnd, 10, 3, 1)
			forEachSpan(td, func(_ int, ss ptrace.ScopeSpans, k int) {
				sp := ss.Spans().At(k)
				sp.Attributes().Clear()
				sp.TraceState().FromRaw("ot=th:e666")
				spans[sp.Name()]++
			})
			r.consume(td)
		}
		seriesTotals(t, settledFlush(t, r), totals)
	}
	w := 65536.0 / (65536 - 0xe666)
	require.InDelta(t, 9.9994, w, 1e-4)
	for name, n := range spans {
		exact := float64(n) * w
		require.Greater(t, float64(totals[name]), exact-1, name)
		require.LessOrEqual(t, float64(totals[name]), exact+1e-6, name)
	}
}

// stripped returns td without tracestates and sampling attributes.
func stripped(td ptrace.Traces) ptrace.Traces {
	out := ptrace.NewTraces()
	td.CopyTo(out)
	forEachSpan(out, func(_ int, ss ptrace.ScopeSpans, k int) {
		sp := ss.Spans().At(k)
		sp.TraceState().FromRaw("")
		sp.Attributes().Remove("sampling.probability")
	})
	return out
}

// Exemplars are the spans' own durations, never multiplied: the same as without weights,
// while the counts are 8 times as large.
func TestWeightedExemplarsAreUnweighted(t *testing.T) {
	raw := map[string]any{"exemplars": map[string]any{"enabled": true, "max_per_data_point": 3}, "aggregation_temporality": "AGGREGATION_TEMPORALITY_DELTA"}
	weighted := startConnector(t, NewFactory(), raw)
	plain := startConnector(t, NewFactory(), raw)
	td := genTraces(newRand(9), 500, genOptions{services: 2, names: 3})
	forEachSpan(td, func(_ int, ss ptrace.ScopeSpans, k int) { ss.Spans().At(k).TraceState().FromRaw("ot=th:e") })
	weighted.consume(td)
	plain.consume(stripped(td))
	want, got := points(t, settledFlush(t, plain), false), points(t, settledFlush(t, weighted), false)
	require.Equal(t, len(want), len(got))
	exemplars := 0
	for k, w := range want {
		g := got[k]
		require.Equal(t, w.Exemplars, g.Exemplars, k)
		exemplars += len(g.Exemplars)
		require.Equal(t, 8*w.Int, g.Int, k)
		require.Equal(t, 8*w.Count, g.Count, k)
		require.InEpsilon(t, 8*w.Sum+1, g.Sum+1, 1e-9, k)
	}
	require.Positive(t, exemplars)
}

// Invalid thresholds and probabilities count 1, and are counted in telemetry.
func TestInvalidWeightsCountOne(t *testing.T) {
	raw := map[string]any{"sampling": map[string]any{"attribute": "sampling.probability"}, "aggregation_temporality": "AGGREGATION_TEMPORALITY_DELTA"}
	weighted := startConnector(t, NewFactory(), raw)
	plain := startConnector(t, NewFactory(), raw)
	td := genTraces(newRand(10), 400, genOptions{services: 2, names: 3})
	invalid := 0
	forEachSpan(td, func(i int, ss ptrace.ScopeSpans, k int) {
		sp := ss.Spans().At(k)
		switch i % 9 {
		case 0:
			sp.TraceState().FromRaw("ot=th:g")
		case 1:
			sp.TraceState().FromRaw("ot=th:8;rv:00000000000000") // rv < th
		case 2:
			sp.TraceState().FromRaw("ot=th:123456789abcdef") // 15 digits
		case 3:
			sp.Attributes().PutDouble("sampling.probability", 0)
		case 4:
			sp.Attributes().PutDouble("sampling.probability", 1.5)
		case 5:
			sp.Attributes().PutStr("sampling.probability", "often")
		case 6:
			sp.Attributes().PutBool("sampling.probability", true)
		case 7:
			sp.TraceState().FromRaw("vendor=x") // nothing to read: not invalid
			invalid--
		case 8:
			sp.TraceState().FromRaw("ot=th:g") // as the next one: the memo counts it again
		}
		invalid++
	})
	weighted.consume(td)
	plain.consume(stripped(td))
	requireSamePoints(t, points(t, settledFlush(t, plain), false), points(t, settledFlush(t, weighted), false))
	require.Equal(t, int64(invalid), weighted.conn.(*connectorImp).tel.InvalidWeights.Load())
	require.Zero(t, plain.conn.(*connectorImp).tel.InvalidWeights.Load())
}

// sampling.weighted: false counts every span 1 whatever its tracestate or attribute: what
// spanmetrics gives for the same spans without sampling information (spanmetrics weighs
// tracestate thresholds itself since v0.165.1, and up to v0.145.0 counted every span 1).
func TestUnweightedCountsEverySpanOnce(t *testing.T) {
	base := map[string]any{"aggregation_temporality": "AGGREGATION_TEMPORALITY_DELTA", "dimensions": dims("http.method")}
	stock := startConnector(t, spanmetricsconnector.NewFactory(), base)
	oursRaw := map[string]any{"sampling": map[string]any{"weighted": false}}
	for k, v := range base {
		oursRaw[k] = v
	}
	ours := startConnector(t, NewFactory(), oursRaw)
	for range 3 {
		td, _ := weighAndReplicate(genTraces(newRand(13), 300, genOptions{services: 2, names: 4}), newRand(14))
		forEachSpan(td, func(_ int, ss ptrace.ScopeSpans, k int) {
			ss.Spans().At(k).Attributes().PutDouble("sampling.probability", 0.25)
		})
		stock.consume(stripped(td))
		ours.consume(td)
		requireSamePoints(t, points(t, settledFlush(t, stock), false), points(t, settledFlush(t, ours), false))
	}
}

func TestLoadSamplingConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "sampling.yaml"))
	require.NoError(t, err)
	for _, tt := range []struct {
		id           string
		expected     SamplingConfig
		errorMessage string
	}{
		{id: "default", expected: SamplingConfig{Weighted: true}},
		{id: "attribute", expected: SamplingConfig{Weighted: true, Attribute: "sampling.probability"}},
		{id: "unweighted", expected: SamplingConfig{Weighted: false}},
		{id: "attribute_unweighted", errorMessage: "sampling.attribute: set, but sampling.weighted is false"},
		{id: "method_unweighted", errorMessage: "enable_metrics_sampling_method: set, but sampling.weighted is false"},
	} {
		t.Run(tt.id, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			sub, err := cm.Sub(component.NewIDWithName(metadata.Type, tt.id).String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if tt.errorMessage != "" {
				require.ErrorContains(t, err, tt.errorMessage)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.expected, cfg.Sampling)
		})
	}
}

// Weighted traffic allocates nothing either, once the pooled batches have grown.
func TestWeightedSteadyStateAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	r := startConnector(t, NewFactory(), map[string]any{
		"dimensions": dims("http.method"),
		"exemplars":  map[string]any{"enabled": true},
		"events":     map[string]any{"enabled": true, "dimensions": dims("exception.type")},
	})
	c := r.conn.(*connectorImp)
	rnd, wrnd := newRand(3), newRand(4)
	var batches []ptrace.Traces
	for range 64 {
		w, _ := weighAndReplicate(genTraces(rnd, 200, genOptions{services: 3, names: 5, events: true}), wrnd)
		batches = append(batches, w)
	}
	i := 0
	call := func() {
		require.NoError(t, c.ConsumeTraces(context.Background(), batches[i%len(batches)]))
		i++
		if i%256 == 0 {
			c.settle(t)
		}
	}
	testing.AllocsPerRun(2048, call)
	allocs := testing.AllocsPerRun(2048, call)
	require.LessOrEqual(t, allocs, float64(maxAllocsPerCall), "allocations per 200-span call")
	require.Positive(t, c.tel.SeriesLive.Load())
	// Spans weighing up to 16 count more calls than spans: the weighted path ran.
	var calls int64
	for _, rm := range r.flush().ResourceMetrics().All() {
		for _, m := range rm.ScopeMetrics().At(0).Metrics().All() {
			if m.Name() == DefaultNamespace+".calls" {
				for _, dp := range m.Sum().DataPoints().All() {
					calls += dp.IntValue()
				}
			}
		}
	}
	require.Greater(t, calls, int64(i)*200, "the weighted path ran")
}

// settledFlush flushes once everything consumed is applied: a tick that finds the aggregator
// woken for a full batch may otherwise flush part of the calls before it (by design: flushes
// stay on time under load), and the totals compared here would be cut at a different place.
func settledFlush(t *testing.T, r *running) pmetric.Metrics {
	if c, ok := r.conn.(*connectorImp); ok {
		c.settle(t)
	}
	return r.flush()
}

// enable_metrics_sampling_method splits every series by sampling.method: spans with an adjusted
// count (a valid threshold, even th:0, or the probability attribute) are "extrapolated", the
// others, invalid thresholds included, "counted"; the calls of each add up to their weights.
func TestSamplingMethodLabel(t *testing.T) {
	r := startConnector(t, NewFactory(), map[string]any{
		"aggregation_temporality":        "AGGREGATION_TEMPORALITY_DELTA",
		"enable_metrics_sampling_method": true,
		"sampling":                       map[string]any{"attribute": "sampling.probability"},
	})
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(series.ServiceNameKey, "svc")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	add := func(setup func(ptrace.Span)) {
		s := spans.AppendEmpty()
		s.SetName("op")
		s.SetStartTimestamp(1)
		s.SetEndTimestamp(2_000_001)
		setup(s)
	}
	for range 3 {
		add(func(s ptrace.Span) { s.TraceState().FromRaw("ot=th:8") }) // 2 each
	}
	add(func(s ptrace.Span) { s.TraceState().FromRaw("ot=th:0") })                      // 1, extrapolated
	add(func(s ptrace.Span) { s.Attributes().PutDouble("sampling.probability", 0.25) }) // 4
	for range 2 {
		add(func(ptrace.Span) {}) // no sampling information
	}
	add(func(s ptrace.Span) { s.TraceState().FromRaw("ot=th:g") }) // invalid: counts 1
	r.consume(td)

	got := map[string]int64{}
	md := settledFlush(t, r)
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Name() != "traces.span.metrics.calls" {
					continue
				}
				for _, dp := range m.Sum().DataPoints().All() {
					v, ok := dp.Attributes().Get(series.SamplingMethodKey)
					require.True(t, ok, "every series has sampling.method")
					got[v.Str()] += dp.IntValue()
				}
			}
		}
	}
	assert.Equal(t, map[string]int64{"extrapolated": 3*2 + 1 + 4, "counted": 3}, got)
}

// Spans kept at 10% by contrib's consistent probability sampling (pkg/sampling: the trace ID's
// randomness against the 10% threshold, which is written to the kept spans' tracestate) count
// as an unbiased estimate of every span: the calls are within 3σ of the spans before sampling,
// σ = √(N·(1−p)/p), for several seeds.
func TestTenPercentSampledEstimatesTheTrueCount(t *testing.T) {
	const n, p = 100_000, 0.1
	th, err := contribsampling.ProbabilityToThreshold(p)
	require.NoError(t, err)
	sigma := math.Sqrt(n * (1 - p) / p)
	for seed := range uint64(4) {
		r := startConnector(t, NewFactory(), map[string]any{"aggregation_temporality": "AGGREGATION_TEMPORALITY_DELTA"})
		rnd := rand.New(rand.NewPCG(seed, 10))
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr(series.ServiceNameKey, "svc")
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		kept := 0
		for range n {
			var id pcommon.TraceID
			binary.LittleEndian.PutUint64(id[:8], rnd.Uint64())
			binary.LittleEndian.PutUint64(id[8:], rnd.Uint64())
			if !th.ShouldSample(contribsampling.TraceIDToRandomness(id)) {
				continue
			}
			kept++
			s := spans.AppendEmpty()
			s.SetName("op")
			s.SetTraceID(id)
			s.SetStartTimestamp(1)
			s.SetEndTimestamp(2_000_001)
			s.TraceState().FromRaw("ot=th:" + th.TValue())
		}
		r.consume(td)
		var calls int64
		for _, p := range points(t, settledFlush(t, r), false) {
			calls += p.Int
		}
		t.Logf("seed %d: %d kept of %d, estimate %d (3σ = %.0f)", seed, kept, n, calls, 3*sigma)
		require.InDelta(t, n, float64(calls), 3*sigma, "estimate of %d spans from %d kept", n, kept)
	}
}
