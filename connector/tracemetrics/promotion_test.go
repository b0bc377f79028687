package tracemetrics

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

	"github.com/otelcol-red/otelcol-red/internal/hash"
)

// tagColliding is the factory whose identity hash has only 8 values in its top 32 bits: the tag
// the hash index compares (internal/hash). Ids that share a tag come out of one probe
// together, so a decision taken on the tag alone takes one series for another; with 8 tags,
// every refused series shares its tag with many series that have a slot.
func tagColliding() connector.Factory {
	return oursWith(func(d *deps) {
		d.keyHash = func(b []byte) uint64 {
			h := hash.Sum64(b)
			return h&0xffff_ffff | (h>>32)%8<<32
		}
	})
}

// IDs seen once fill max_series; then 60 operations of three services start, each at its own
// steady rate (3 to 40 spans an interval), while more IDs keep coming. Each operation has its
// own series within two intervals, holding every span of the interval from then on; none is
// starved, whatever its rate, with the default hash and with one whose tags collide (the cause
// of a steady operation at 39 spans/s never getting its series: a refused series whose tag
// another series shared was taken for one that had its slot). Calls per service are exact at
// every flush.
func TestSteadySeriesAreNeverStarved(t *testing.T) {
	const maxSeries, ops, intervals = 300, 60, 6
	for _, temporality := range []string{delta, cumulative} {
		for _, colliding := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tag-colliding=%v", temporality, colliding), func(t *testing.T) {
				f := NewFactory()
				if colliding {
					f = tagColliding()
				}
				c, sink, clock, _ := startOursFrom(t, f, map[string]any{
					"aggregation_temporality": temporality,
					"metrics_flush_interval":  time.Second,
					"series_expiration":       time.Hour,
					"max_series":              maxSeries,
				}, true)
				r := rand.New(rand.NewPCG(7, 8))
				rate := func(op int) int { return 3 + op*7%38 }
				id := 0
				ids := func(n int) []selSpan {
					var spans []selSpan
					for range n {
						spans = append(spans, selSpan{svc: "ids", name: fmt.Sprintf("GET /orders/%d", id), ms: 1})
						id++
					}
					return spans
				}
				var all []selSpan
				own := map[string]int64{} // operation → calls in its own series, as last exported
				for iv := 0; iv < intervals; iv++ {
					spans := ids(maxSeries / 3)
					if iv == 0 {
						spans = ids(maxSeries + 50)
					}
					sent := map[string]int64{}
					if iv > 0 {
						for op := range ops {
							name := fmt.Sprintf("op-%02d", op)
							for range rate(op) {
								spans = append(spans, selSpan{svc: fmt.Sprintf("svc-%d", op%3), name: name, ms: int64(1 + r.IntN(50))})
							}
							sent[name] = int64(rate(op))
						}
					}
					r.Shuffle(len(spans), func(i, j int) { spans[i], spans[j] = spans[j], spans[i] })
					for i := 0; i < len(spans); i += 50 {
						require.NoError(t, c.ConsumeTraces(context.Background(), selTraces(spans[i:min(i+50, len(spans))])))
					}
					all = append(all, spans...)
					got := selPoints(t, flushOnce(t, c, sink, clock, time.Second))
					want := spans
					if temporality == cumulative {
						want = all
					}
					requireSameTotals(t, sentTotals(want, func(s selSpan) string { return s.svc }),
						selTotals(got, func(k redKey) string { return k.svc }), fmt.Sprintf("interval %d, per service", iv))
					for name, n := range sent {
						var calls int64
						for k, p := range got {
							if k.name == name && !k.overflow {
								calls += p.calls
							}
						}
						if temporality == cumulative {
							calls, own[name] = calls-own[name], calls
						}
						if iv >= 2 {
							require.Equal(t, n, calls, "%s (%d spans an interval) in interval %d: every span in its own series", name, n, iv)
						}
					}
				}
			})
		}
	}
}

// A service's budget is held by 50 operations of 4 spans an interval; then 200 more
// operations of the same rate and one of 12 arrive. The heavier one has its own series within
// two intervals, exact from then on; the others, no busier than the series that hold the
// budget, never take a place (the factor 2 of hysteresis: equals do not trade places), and the
// held ones keep theirs. Calls per service are exact at every flush.
func TestHeavierSeriesAmongEqualsIsPromoted(t *testing.T) {
	const budget, crowd, intervals = 50, 200, 5
	for _, temporality := range []string{delta, cumulative} {
		t.Run(temporality, func(t *testing.T) {
			c, sink, clock, tel := startOurs(t, map[string]any{
				"aggregation_temporality": temporality,
				"metrics_flush_interval":  time.Second,
				"series_expiration":       time.Hour,
				"max_series_per_service":  budget,
			}, true)
			r := rand.New(rand.NewPCG(9, 10))
			var all []selSpan
			heavyFrom := -1
			var heavyPrev int64
			for iv := 0; iv < intervals; iv++ {
				var spans []selSpan
				add := func(name string, n int) {
					for range n {
						spans = append(spans, selSpan{svc: "shop", name: name, ms: int64(1 + r.IntN(50))})
					}
				}
				for op := range budget {
					add(fmt.Sprintf("held-%02d", op), 4)
				}
				if iv > 0 {
					for op := range crowd {
						add(fmt.Sprintf("crowd-%03d", op), 4)
					}
					add("heavy", 12)
				}
				r.Shuffle(len(spans), func(i, j int) { spans[i], spans[j] = spans[j], spans[i] })
				for i := 0; i < len(spans); i += 40 {
					require.NoError(t, c.ConsumeTraces(context.Background(), selTraces(spans[i:min(i+40, len(spans))])))
				}
				all = append(all, spans...)
				got := selPoints(t, flushOnce(t, c, sink, clock, time.Second))
				want := spans
				if temporality == cumulative {
					want = all
				}
				requireSameTotals(t, sentTotals(want, func(s selSpan) string { return s.svc }),
					selTotals(got, func(k redKey) string { return k.svc }), fmt.Sprintf("interval %d, per service", iv))
				for k, p := range got {
					if k.overflow {
						continue
					}
					require.NotContains(t, k.name, "crowd-", "an operation no busier than those holding the budget took a place")
					if k.name == "heavy" {
						calls := p.calls
						if temporality == cumulative {
							calls, heavyPrev = calls-heavyPrev, calls
						}
						if heavyFrom < 0 {
							heavyFrom = iv
						} else {
							require.EqualValues(t, 12, calls, "heavy in interval %d", iv)
						}
					}
				}
			}
			require.GreaterOrEqual(t, heavyFrom, 1)
			require.LessOrEqual(t, heavyFrom, 2, "heavy (from interval 1) has its own series within two intervals")
			require.Equal(t, map[string]int64{"max_series_per_service": 1, "max_series": 0}, seriesCounterByLimit(t, tel, "promoted_series"),
				"one promotion: the heavier operation")
		})
	}
}

// deltaStartsNeverOverlap requires, for every label set of every delta sum in exports (in
// order), that a point never starts before the previous point of the same label set ended:
// the rule by which a downstream that adds deltas up (cachedprom) drops a point.
func deltaStartsNeverOverlap(t *testing.T, exports []pmetric.Metrics) {
	t.Helper()
	ends := map[string]int64{}
	for _, md := range exports {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					if m.Type() != pmetric.MetricTypeSum || m.Sum().AggregationTemporality() != pmetric.AggregationTemporalityDelta {
						continue
					}
					for _, dp := range m.Sum().DataPoints().All() {
						k := m.Name() + "|" + attrString(rm.Resource().Attributes()) + "|" + attrString(dp.Attributes())
						start, end := int64(dp.StartTimestamp()), int64(dp.Timestamp())
						require.GreaterOrEqual(t, start, ends[k], "a delta point of %s starts before its previous point ended", k)
						ends[k] = end
					}
				}
			}
		}
	}
}

// steadySeries is a real operation of the property tests: from interval start on, rate spans
// every interval.
type steadySeries struct {
	svc, name   string
	status      ptrace.StatusCode
	rate, start int
}

// Random mixes: a burst of IDs fills the cap (max_series across services, or one service's
// max_series_per_service that its IDs and its operations share), IDs keep coming, and
// operations of random rates (3 to 40 spans an interval, some with an error variant) start in
// random intervals, in random request sizes and order. Whatever the mix:
//   - totals are exact per service and status code at every flush;
//   - no cumulative counter ever goes backwards;
//   - no operation is starved: from the interval after the one it started in, every one of its
//     spans is in its own series (so it has its series within two intervals).
//
// The last case has 10,000 operations starting at once: promotions scale with them.
func TestRandomMixesNeverStarve(t *testing.T) {
	type mix struct {
		seed        uint64
		temporality string
		perService  bool
		steady      int
		intervals   int
	}
	var mixes []mix
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 41))
		mixes = append(mixes, mix{seed: seed, temporality: []string{delta, cumulative}[seed%2], perService: seed%4 >= 2,
			steady: 20 + r.IntN(400), intervals: 6})
	}
	mixes = append(mixes, mix{seed: 100, temporality: delta, steady: 10_000, intervals: 4})
	for _, m := range mixes {
		t.Run(fmt.Sprintf("seed=%d/%s/per-service=%v/operations=%d", m.seed, m.temporality, m.perService, m.steady), func(t *testing.T) {
			r := rand.New(rand.NewPCG(m.seed, 42))
			idSvc := "ids"
			var ops []steadySeries
			for i := range m.steady {
				svc := fmt.Sprintf("svc-%d", i%5)
				if m.perService {
					svc = idSvc // the operations share the budget their service's IDs fill
				}
				start := 1
				if m.steady < 1000 {
					start = 1 + r.IntN(3)
				}
				s := steadySeries{svc: svc, name: fmt.Sprintf("op-%d", i), rate: 3 + r.IntN(38), start: start}
				ops = append(ops, s)
				if r.IntN(3) == 0 {
					s.status, s.rate = ptrace.StatusCodeError, 3+r.IntN(10)
					ops = append(ops, s)
				}
			}
			// Room for every operation (the cap holds IDs when they start), and some more.
			capacity := len(ops) + 50 + r.IntN(200)
			raw := map[string]any{
				"aggregation_temporality": m.temporality,
				"metrics_flush_interval":  time.Second,
				"series_expiration":       time.Hour,
			}
			if m.perService {
				raw["max_series_per_service"] = capacity
			} else {
				raw["max_series"] = capacity
			}
			c, sink, clock, _ := startOurs(t, raw, true)
			id := 0
			var all []selSpan
			prev := map[redKey]int64{}
			own := map[redKey]int64{}
			for iv := range m.intervals {
				var spans []selSpan
				ids := r.IntN(capacity / 2)
				if iv == 0 {
					ids = capacity + 50
				}
				for range ids {
					spans = append(spans, selSpan{svc: idSvc, name: fmt.Sprintf("GET /orders/%d", id), ms: 1})
					id++
				}
				for _, s := range ops {
					if iv >= s.start {
						for range s.rate {
							spans = append(spans, selSpan{svc: s.svc, name: s.name, status: s.status, ms: int64(1 + r.IntN(50))})
						}
					}
				}
				r.Shuffle(len(spans), func(i, j int) { spans[i], spans[j] = spans[j], spans[i] })
				for i := 0; i < len(spans); {
					n := 1 + r.IntN(500)
					require.NoError(t, c.ConsumeTraces(context.Background(), selTraces(spans[i:min(i+n, len(spans))])))
					i += n
				}
				got := selPoints(t, flushOnce(t, c, sink, clock, time.Second))
				want := spans
				if m.temporality == cumulative {
					all = append(all, spans...)
					want = all
				}
				requireSameTotals(t, sentTotals(want, func(s selSpan) [2]string { return [2]string{s.svc, series.StatusName(series.StatusByte(s.status))} }),
					selTotals(got, func(k redKey) [2]string { return [2]string{k.svc, k.status} }), fmt.Sprintf("interval %d, per service and status", iv))
				if m.temporality == cumulative {
					for k, p := range got {
						require.GreaterOrEqual(t, p.calls, prev[k], "interval %d: a counter went backwards: %v", iv, k)
						prev[k] = p.calls
					}
				}
				starved := 0
				var first string
				for _, s := range ops {
					k := redKey{svc: s.svc, name: s.name, kind: "SPAN_KIND_SERVER", status: series.StatusName(series.StatusByte(s.status))}
					var calls int64
					if p := got[k]; p != nil {
						calls = p.calls
					}
					if m.temporality == cumulative {
						calls, own[k] = calls-own[k], calls
					}
					if iv > s.start && calls != int64(s.rate) {
						if starved++; starved == 1 {
							first = fmt.Sprintf("%s %s %v (%d spans an interval from interval %d): %d in its own series", s.svc, s.name, s.status, s.rate, s.start, calls)
						}
					}
				}
				require.Zero(t, starved, "interval %d: operations without every span in their own series, the first: %s", iv, first)
			}
		})
	}
}

// A burst of IDs fills the cap within one interval; the operations arrive in the next one,
// right behind it. Each has its own series from its third span, in that interval: the IDs that
// received one span in the interval that ended are victims at once (their counts are read at
// the swap). Before, a series that received any span in the last interval was never a victim,
// so right after a burst no ID was, and every operation waited for the next flush.
func TestOperationsBehindABurstGetTheirSeriesAtOnce(t *testing.T) {
	const maxSeries, ops, perOp = 5000, 100, 10
	for _, temporality := range []string{delta, cumulative} {
		t.Run(temporality, func(t *testing.T) {
			c, sink, clock, _ := startOurs(t, map[string]any{
				"aggregation_temporality": temporality,
				"metrics_flush_interval":  time.Second,
				"series_expiration":       time.Hour,
				"max_series":              maxSeries,
			}, true)
			r := rand.New(rand.NewPCG(1, 2))
			var spans []selSpan
			for range 3 * maxSeries {
				spans = append(spans, selSpan{svc: "ids", name: fmt.Sprintf("GET /orders/%d", r.IntN(6*maxSeries)), ms: 1})
			}
			for i := 0; i < len(spans); i += 500 {
				require.NoError(t, c.ConsumeTraces(context.Background(), selTraces(spans[i:i+500])))
			}
			flushOnce(t, c, sink, clock, time.Second)
			spans = spans[:0]
			for range perOp {
				for op := range ops {
					spans = append(spans, selSpan{svc: "shop", name: fmt.Sprintf("op-%d", op), ms: 1})
				}
			}
			for i := 0; i < len(spans); i += ops {
				require.NoError(t, c.ConsumeTraces(context.Background(), selTraces(spans[i:i+ops])))
			}
			got := selPoints(t, flushOnce(t, c, sink, clock, time.Second))
			for op := range ops {
				k := redKey{svc: "shop", name: fmt.Sprintf("op-%d", op), kind: "SPAN_KIND_SERVER", status: "STATUS_CODE_UNSET"}
				require.NotNil(t, got[k], "%s has its own series in the interval it arrived in", k.name)
				require.EqualValues(t, perOp-minPromoteSpans+1, got[k].calls, "%s: every span from its third", k.name)
			}
		})
	}
}

// minPromoteSpans is the aggregator's minPromote: the span of a refused series' chain that
// takes a place.
const minPromoteSpans = 3
