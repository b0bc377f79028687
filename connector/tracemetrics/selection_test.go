package tracemetrics

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// selSpan is one span of the selection tests: what a series is keyed by, and its duration.
type selSpan struct {
	svc, name string
	status    ptrace.StatusCode
	ms        int64
}

// selTraces builds one request with a resource per service, in the order of spans.
func selTraces(spans []selSpan) ptrace.Traces {
	td := ptrace.NewTraces()
	base := pcommon.NewTimestampFromTime(testStart.Add(-time.Minute))
	scopes := map[string]ptrace.SpanSlice{}
	for _, s := range spans {
		ss, ok := scopes[s.svc]
		if !ok {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr(series.ServiceNameKey, s.svc)
			ss = rs.ScopeSpans().AppendEmpty().Spans()
			scopes[s.svc] = ss
		}
		sp := ss.AppendEmpty()
		sp.SetName(s.name)
		sp.SetKind(ptrace.SpanKindServer)
		sp.Status().SetCode(s.status)
		sp.SetStartTimestamp(base)
		sp.SetEndTimestamp(base + pcommon.Timestamp(s.ms*int64(time.Millisecond)))
	}
	return td
}

// selPoints reads the calls and duration points of one export by series (overflow series:
// name "").
func selPoints(t *testing.T, md pmetric.Metrics) map[redKey]*redCounts {
	t.Helper()
	out := map[redKey]*redCounts{}
	redPoints(t, md, out)
	return out
}

// selTotals adds up points by group.
func selTotals[K comparable](pts map[redKey]*redCounts, group func(redKey) K) map[K]redCounts {
	out := map[K]redCounts{}
	for k, p := range pts {
		g := out[group(k)]
		g.calls += p.calls
		g.durations += p.durations
		g.sum += p.sum
		out[group(k)] = g
	}
	return out
}

func sentTotals[K comparable](spans []selSpan, group func(selSpan) K) map[K]redCounts {
	out := map[K]redCounts{}
	for _, s := range spans {
		g := out[group(s)]
		g.calls++
		g.durations++
		g.sum += float64(s.ms)
		out[group(s)] = g
	}
	return out
}

func requireSameTotals[K comparable](t *testing.T, want, got map[K]redCounts, what string) {
	t.Helper()
	require.Equal(t, len(want), len(got), "%s: groups", what)
	for k, w := range want {
		g := got[k]
		require.Equal(t, w.calls, g.calls, "%s: calls of %v", what, k)
		require.Equal(t, w.durations, g.durations, "%s: histogram count of %v", what, k)
		require.InDelta(t, w.sum, g.sum, 1e-6*(1+w.sum), "%s: histogram sum of %v", what, k)
	}
}

// A service first sends span names with a unique ID each, which fill its
// max_series_per_service, then 50 real operations at a steady rate while the IDs go on. By
// traffic: each operation has its own series from the second interval it is seen in, with
// exactly the spans sent from then on; the IDs of later intervals never get one; a second
// service's series are untouched; calls, histogram counts and sums per service add up to the
// input at every flush. By arrival the operations stay in overflow: that is what the
// selection changes.
func TestBusiestKeepTheirSeries(t *testing.T) {
	const (
		budget    = 100 // max_series_per_service
		ops       = 50
		perOp     = 10 // spans per operation and interval
		idsPerInt = 300
		intervals = 6
	)
	for _, temporality := range []string{cumulative, delta} {
		for _, by := range []string{selectByTraffic, selectByArrival} {
			t.Run(temporality+"/"+by, func(t *testing.T) {
				c, sink, clock, tel := startOurs(t, map[string]any{
					"aggregation_temporality": temporality,
					"metrics_flush_interval":  time.Second,
					"series_expiration":       time.Hour,
					"max_series_per_service":  budget,
					"cap_selection":           map[string]any{"by": by},
				}, true)
				r := rand.New(rand.NewPCG(5, 6))
				var all []selSpan
				firstSeen := map[string]int{} // operation → the interval its series first appears in
				cum := map[redKey]int64{}     // operation series → calls sent since it appeared
				id := 0
				for iv := 0; iv < intervals; iv++ {
					var spans []selSpan
					for range idsPerInt {
						spans = append(spans, selSpan{svc: "noisy", name: fmt.Sprintf("GET /orders/%d", id), status: ptrace.StatusCode(id % 3), ms: int64(1 + id%50)})
						id++
					}
					if iv > 0 { // the operations start once the IDs have filled the budget
						for op := range ops {
							for range perOp {
								spans = append(spans, selSpan{svc: "noisy", name: fmt.Sprintf("op-%d", op), status: ptrace.StatusCode(op % 3), ms: int64(1 + r.IntN(100))})
							}
						}
					}
					for op := range 10 {
						spans = append(spans, selSpan{svc: "quiet", name: fmt.Sprintf("q-%d", op), status: ptrace.StatusCode(op % 2), ms: int64(1 + r.IntN(100))})
					}
					r.Shuffle(len(spans), func(i, j int) { spans[i], spans[j] = spans[j], spans[i] })
					for i := 0; i < len(spans); i += 100 {
						require.NoError(t, c.ConsumeTraces(context.Background(), selTraces(spans[i:min(i+100, len(spans))])))
					}
					all = append(all, spans...)
					md := flushOnce(t, c, sink, clock, time.Second)
					got := selPoints(t, md)

					// Per service, and per service and status code: the input, at every flush.
					var wantSvc map[string]redCounts
					var wantStatus map[[2]string]redCounts
					if temporality == cumulative {
						wantSvc = sentTotals(all, func(s selSpan) string { return s.svc })
						wantStatus = sentTotals(all, func(s selSpan) [2]string { return [2]string{s.svc, series.StatusName(series.StatusByte(s.status))} })
					} else {
						wantSvc = sentTotals(spans, func(s selSpan) string { return s.svc })
						wantStatus = sentTotals(spans, func(s selSpan) [2]string { return [2]string{s.svc, series.StatusName(series.StatusByte(s.status))} })
					}
					requireSameTotals(t, wantSvc, selTotals(got, func(k redKey) string { return k.svc }), fmt.Sprintf("interval %d, per service", iv))
					requireSameTotals(t, wantStatus, selTotals(got, func(k redKey) [2]string { return [2]string{k.svc, k.status} }), fmt.Sprintf("interval %d, per service and status", iv))

					// The quiet service: its own series, exact, never overflow.
					for k, p := range got {
						if k.svc != "quiet" {
							continue
						}
						require.False(t, k.overflow, "quiet overflows")
						want := int64(1)
						if temporality == cumulative {
							want = int64(iv + 1)
						}
						require.Equal(t, want, p.calls, "quiet series %v", k)
					}

					// Operations: exact from the interval their series appears in.
					for k, p := range got {
						if k.svc != "noisy" || k.overflow || len(k.name) < 3 || k.name[:3] != "op-" {
							continue
						}
						want := int64(perOp)
						if _, ok := firstSeen[k.name]; !ok {
							firstSeen[k.name] = iv
							// Promoted at a flush, it holds the interval's spans; at once (the
							// IDs of the interval before, seen once, give their place up to a
							// third span), every span from the batch of its third on.
							require.GreaterOrEqual(t, p.calls, int64(perOp-minPromoteSpans+1), "%v from its third span", k)
							want = p.calls
						}
						cum[k] += want
						if temporality == cumulative {
							want = cum[k]
						}
						require.Equal(t, want, p.calls, "calls of %v in interval %d (own series since %d)", k, iv, firstSeen[k.name])
						require.Equal(t, want, p.durations, "histogram count of %v", k)
					}
					// IDs sent after the first interval never get a series.
					for k := range got {
						var n int
						if _, err := fmt.Sscanf(k.name, "GET /orders/%d", &n); err == nil && !k.overflow {
							require.Less(t, n, idsPerInt, "an ID of a later interval got a series")
						}
					}
				}
				if by == selectByArrival {
					require.Empty(t, firstSeen, "by arrival the IDs keep the budget")
					return
				}
				require.Len(t, firstSeen, ops, "every operation got its own series")
				for op, iv := range firstSeen {
					require.LessOrEqual(t, iv, 2, "%s (from interval 1) promoted within two intervals", op)
				}
				// max_series (the default 500,000) is configured too, and refused nothing.
				require.Equal(t, map[string]int64{"max_series_per_service": ops, "max_series": 0}, seriesCounterByLimit(t, tel, "promoted_series"))
				require.Equal(t, map[string]int64{"max_series_per_service": ops, "max_series": 0}, seriesCounterByLimit(t, tel, "demoted_series"))
			})
		}
	}
}

// seriesCounterByLimit returns a connector counter or gauge by its limit attribute.
func seriesCounterByLimit(t *testing.T, tel *componenttest.Telemetry, name string) map[string]int64 {
	t.Helper()
	m, err := tel.GetMetric("otelcol_connector_tracemetrics_" + name)
	require.NoError(t, err)
	out := map[string]int64{}
	var dps []metricdata.DataPoint[int64]
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		dps = d.DataPoints
	case metricdata.Gauge[int64]:
		dps = d.DataPoints
	}
	for _, dp := range dps {
		limit, ok := dp.Attributes.Value("limit")
		require.True(t, ok, "%s has a limit attribute", name)
		out[limit.AsString()] = dp.Value
	}
	return out
}

// Random traffic (services with a few busy operations that change over time, a long tail
// and IDs; random caps, sketch sizes and request sizes; both temporalities; span-name
// clustering and rules on or off in front of the caps): whatever the
// re-rankings promote and demote, calls, histogram counts and sums per service and per
// service and status code equal the input at every flush (cumulative: everything sent so
// far, nothing expires; delta: the interval's, series expiring), no cumulative series goes
// backwards, and no interval has more series than the caps allow.
func TestSelectionKeepsTotalsExact(t *testing.T) {
	demotions := int64(0)
	for seed := range uint64(16) {
		r := rand.New(rand.NewPCG(seed, 77))
		temporality := []string{cumulative, delta}[seed%2]
		budget := 5 + r.IntN(30)
		global := 20 + r.IntN(80)
		expiration := time.Hour
		if temporality == delta {
			expiration = time.Duration(1+r.IntN(4)) * time.Second
		}
		t.Run(fmt.Sprintf("seed=%d/%s/budget=%d/max=%d", seed, temporality, budget, global), func(t *testing.T) {
			raw := map[string]any{
				"aggregation_temporality": temporality,
				"metrics_flush_interval":  time.Second,
				"series_expiration":       expiration,
				"max_series_per_service":  budget,
				"max_series":              global,
				"cap_selection":           map[string]any{"memory_mib": 1 + r.IntN(4)},
			}
			// The span-name layers in front of the caps, in every mix: they rename, the caps
			// select, and the totals must not move either way.
			names := map[string]any{}
			if seed%4 < 2 {
				names["clustering"] = map[string]any{"enabled": true, "max_children": 3 + r.IntN(10)}
			}
			if seed%3 == 0 {
				names["rules"] = []any{map[string]any{"match": `^tail-(\d)\d*$`, "replace": "tail-${1}x"}}
			}
			if len(names) > 0 {
				raw["span_name"] = names
			}
			c, sink, clock, tel := startOurs(t, raw, true)
			services := 2 + r.IntN(4)
			var all []selSpan
			prev := map[redKey]int64{}
			id := 0
			for iv := 0; iv < 10; iv++ {
				var spans []selSpan
				for s := range services {
					svc := fmt.Sprintf("svc-%d", s)
					shift := r.IntN(3)
					for range 50 + r.IntN(200) {
						var name string
						switch x := r.Float64(); {
						case x < 0.6:
							name = fmt.Sprintf("busy-%d", (r.IntN(8)+shift*4)%20)
						case x < 0.85:
							name = fmt.Sprintf("tail-%d", r.IntN(100))
						default:
							name = fmt.Sprintf("id-%d", id)
							id++
						}
						spans = append(spans, selSpan{svc: svc, name: name, status: ptrace.StatusCode(r.IntN(3)), ms: int64(r.IntN(500))})
					}
				}
				r.Shuffle(len(spans), func(i, j int) { spans[i], spans[j] = spans[j], spans[i] })
				for i := 0; i < len(spans); {
					n := 1 + r.IntN(200)
					require.NoError(t, c.ConsumeTraces(context.Background(), selTraces(spans[i:min(i+n, len(spans))])))
					i += n
				}
				all = append(all, spans...)
				got := selPoints(t, flushOnce(t, c, sink, clock, time.Second))
				want := spans
				if temporality == cumulative {
					want = all
				}
				requireSameTotals(t, sentTotals(want, func(s selSpan) string { return s.svc }),
					selTotals(got, func(k redKey) string { return k.svc }), "per service")
				requireSameTotals(t, sentTotals(want, func(s selSpan) [2]string { return [2]string{s.svc, series.StatusName(series.StatusByte(s.status))} }),
					selTotals(got, func(k redKey) [2]string { return [2]string{k.svc, k.status} }), "per service and status")
				regular := map[string]int{}
				total := 0
				for k, p := range got {
					if temporality == cumulative {
						require.GreaterOrEqual(t, p.calls, prev[k], "a series went backwards: %v", k)
						prev[k] = p.calls
						continue
					}
					if !k.overflow {
						regular[k.svc]++
						total++
					}
				}
				// Delta exports the series that received spans in the interval: all had a slot.
				for svc, n := range regular {
					require.LessOrEqual(t, n, budget, "series of %s in one interval", svc)
				}
				require.LessOrEqual(t, total, global, "series in one interval")
			}
			d := seriesCounterByLimit(t, tel, "demoted_series")
			demotions += d["max_series_per_service"] + d["max_series"]
		})
	}
	require.Positive(t, demotions, "the random traffic re-ranked")
}

// With max_series alone (max_series_per_service's default, 0), one service's IDs fill the
// budget before another service's operations arrive. By traffic the operations, busier per
// series than any ID, get their own series within two intervals, exact from then on; by
// arrival they stay in overflow while the IDs hold the budget.
func TestMaxSeriesAloneKeepsBusySeriesOfEveryService(t *testing.T) {
	for _, by := range []string{selectByTraffic, selectByArrival} {
		t.Run(by, func(t *testing.T) {
			c, sink, clock, _ := startOurs(t, map[string]any{
				"aggregation_temporality": delta,
				"metrics_flush_interval":  time.Second,
				"max_series":              100,
				"cap_selection":           map[string]any{"by": by},
			}, true)
			own := map[string]int{} // operation → intervals with its own series
			id := 0
			for iv := 0; iv < 4; iv++ {
				var spans []selSpan
				for range 300 { // first in every request: the IDs fill the budget first
					spans = append(spans, selSpan{svc: "noisy", name: fmt.Sprintf("id-%d", id), ms: 1})
					id++
				}
				for op := range 10 {
					for range 3 {
						spans = append(spans, selSpan{svc: "checkout", name: fmt.Sprintf("op-%d", op), ms: 1})
					}
				}
				require.NoError(t, c.ConsumeTraces(context.Background(), selTraces(spans)))
				got := selPoints(t, flushOnce(t, c, sink, clock, time.Second))
				requireSameTotals(t, sentTotals(spans, func(s selSpan) string { return s.svc }),
					selTotals(got, func(k redKey) string { return k.svc }), "per service")
				for k, p := range got {
					if k.svc == "checkout" && !k.overflow {
						require.EqualValues(t, 3, p.calls, "%v has every span of the interval", k)
						own[k.name]++
					}
				}
			}
			if by == selectByArrival {
				require.Empty(t, own, "by arrival the IDs keep the budget")
				return
			}
			require.Len(t, own, 10)
			for op, n := range own {
				// Seen in interval 0, promoted at the first or second flush: its own series
				// from interval 2 at the latest. (Each operation comes in one request per
				// interval here, so the sketch's admission test may turn it away once.)
				require.GreaterOrEqual(t, n, 2, "%s has its own series within two intervals", op)
			}
		})
	}
}

// A demoted series stops cleanly: while it keeps sending, its cumulative value stays where it
// was (its spans go to its service's overflow series), and it expires like an idle series,
// series_expiration after the last span it counted. Totals stay exact throughout, but for the
// counts of the series that expired, which leave the cumulative output as any expired
// series' do.
func TestDemotedSeriesStopAndExpire(t *testing.T) {
	c, sink, clock, _ := startOurs(t, map[string]any{
		"metrics_flush_interval": time.Second,
		"series_expiration":      3 * time.Second,
		"max_series_per_service": 5,
	}, true)
	var all []selSpan
	frozen := map[string]int64{} // demoted series → its value when it stopped
	gone := map[string]int{}     // demoted series → the flush it was last exported in
	for iv := 0; iv < 9; iv++ {
		var spans []selSpan
		for i := range 5 { // the first five, one span each per interval: light
			spans = append(spans, selSpan{svc: "svc", name: fmt.Sprintf("light-%d", i), ms: 1})
		}
		if iv > 0 {
			for i := range 5 { // then five busy ones, refused at first
				for range 5 {
					spans = append(spans, selSpan{svc: "svc", name: fmt.Sprintf("busy-%d", i), ms: 2})
				}
			}
		}
		require.NoError(t, c.ConsumeTraces(context.Background(), selTraces(spans)))
		all = append(all, spans...)
		got := selPoints(t, flushOnce(t, c, sink, clock, time.Second))
		want := sentTotals(all, func(s selSpan) string { return s.svc })["svc"]
		for name, n := range frozen {
			if iv > 1 && !slices.ContainsFunc(slices.Collect(maps.Keys(got)), func(k redKey) bool { return k.name == name }) {
				// Expired: a cumulative series leaves the output with its count (light
				// spans last 1ms).
				want.calls -= n
				want.durations -= n
				want.sum -= float64(n)
			}
		}
		requireSameTotals(t, map[string]redCounts{"svc": want},
			selTotals(got, func(k redKey) string { return k.svc }), fmt.Sprintf("interval %d", iv))
		for i := range 5 {
			name := fmt.Sprintf("light-%d", i)
			var p *redCounts
			for k, v := range got {
				if k.name == name {
					p = v
				}
			}
			switch {
			case iv <= 1:
				require.NotNil(t, p, "%s has its series until the first re-ranking", name)
				require.EqualValues(t, iv+1, p.calls)
				frozen[name] = p.calls
			case p != nil:
				require.Equal(t, frozen[name], p.calls, "%s, demoted, is no longer updated", name)
				gone[name] = iv
			}
		}
	}
	for i := range 5 {
		name := fmt.Sprintf("light-%d", i)
		// Its last counted span came in interval 1: expired 3s later, at the flush of
		// interval 4 at the latest, exported one last time when it expires.
		require.LessOrEqual(t, gone[name], 4, "%s expired like an idle series", name)
		require.GreaterOrEqual(t, gone[name], 2, "%s was exported, unchanged, until it expired", name)
	}
}

// A series promoted at a flush keeps its place through the next re-ranking, where its count
// covers only the part of the interval since its first span; at the one after, a rival
// busier by more than twice takes the place back.
func TestPromotedSeriesKeepTheirPlaceOneInterval(t *testing.T) {
	c, sink, clock, _ := startOurs(t, map[string]any{
		"aggregation_temporality": delta,
		"metrics_flush_interval":  time.Second,
		"max_series_per_service":  1,
	}, true)
	for iv, tc := range []struct {
		a, b  int    // spans of each
		owner string // the one with its own series in this interval
	}{
		{3, 0, "A"},
		{1, 10, "A"}, // B refused, promoted at this flush
		{10, 2, "B"}, // A demoted; B created by its spans of this interval
		{10, 2, "B"}, // B kept its place at the last flush: promoted just before
		{10, 2, "A"}, // A, five times busier, took it back
	} {
		var spans []selSpan
		for range tc.a {
			spans = append(spans, selSpan{svc: "svc", name: "A", ms: 1})
		}
		for range tc.b {
			spans = append(spans, selSpan{svc: "svc", name: "B", ms: 1})
		}
		require.NoError(t, c.ConsumeTraces(context.Background(), selTraces(spans)))
		got := selPoints(t, flushOnce(t, c, sink, clock, time.Second))
		var owners []string
		for k, p := range got {
			if !k.overflow {
				owners = append(owners, k.name)
				require.EqualValues(t, map[string]int{"A": tc.a, "B": tc.b}[k.name], p.calls, "interval %d: %s", iv, k.name)
			}
		}
		require.Equal(t, []string{tc.owner}, owners, "interval %d", iv)
	}
}
