package tracemetrics

import (
	"context"
	"fmt"
	"maps"
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
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview/traceviewtest"
)

// capOverflowAttributes are the attributes of a cap overflow series, sorted, with nothing
// excluded: the built-ins error rates need, and the collector instance ID (spanmetrics'
// includeCollectorInstanceID gate, on by default since v0.165.1).
var capOverflowAttributes = []string{series.CollectorInstanceKey, series.OverflowKey, series.ServiceNameKey, series.SpanKindKey, series.StatusCodeKey}

// redKey is a RED series as the output labels it: name is "" on overflow series.
type redKey struct {
	svc, name, kind, status string
	overflow                bool
}

// redGroup is a service's span kind and status code: what a cap overflow series keeps.
type redGroup struct{ svc, kind, status string }

func (k redKey) group() redGroup { return redGroup{k.svc, k.kind, k.status} }

type redCounts struct {
	calls, durations int64
	sum              float64 // of the durations
	exemplars        int
}

// overflowTraffic is the traffic of the overflow tests: a noisy service whose every span has a
// new span name, of every kind and status code (unknown ones included), and a quiet service
// that adds two new span names per call and repeats the older ones. sent counts what was sent
// per series.
type overflowTraffic struct {
	r    *randSource
	call int
	sent map[redKey]int64
}

type randSource struct{ n uint64 }

// next is a small deterministic generator, so the test does not depend on genTraces' shape.
func (s *randSource) next(n int) int {
	s.n = s.n*6364136223846793005 + 1442695040888963407
	return int((s.n >> 33) % uint64(n))
}

var (
	trafficKinds    = []ptrace.SpanKind{0, 1, 2, 3, 4, 5, 42}
	trafficStatuses = []ptrace.StatusCode{0, 1, 2, 7}
)

func (o *overflowTraffic) next() ptrace.Traces {
	td := ptrace.NewTraces()
	base := pcommon.NewTimestampFromTime(testStart.Add(-time.Minute))
	add := func(svc string, name string, kind ptrace.SpanKind, status ptrace.StatusCode) {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr(series.ServiceNameKey, svc)
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetName(name)
		sp.SetKind(kind)
		sp.Status().SetCode(status)
		sp.SetTraceID(pcommon.TraceID{1, byte(o.call)})
		sp.SetSpanID(pcommon.SpanID{byte(o.r.next(256)), 1})
		sp.SetStartTimestamp(base)
		sp.SetEndTimestamp(base + pcommon.Timestamp(1+o.r.next(100_000_000)))
		sp.Attributes().PutStr("http.method", []string{"GET", "POST"}[o.r.next(2)])
		o.sent[redKey{svc: svc, name: name, kind: series.KindName(series.KindByte(kind)), status: series.StatusName(series.StatusByte(status))}]++
	}
	for i := 0; i < 300; i++ {
		add("noisy", fmt.Sprintf("op-%d-%d", o.call, i),
			trafficKinds[o.r.next(len(trafficKinds))], trafficStatuses[o.r.next(len(trafficStatuses))])
	}
	for j := 0; j < 2*(o.call+1); j++ {
		// The series j/2 of this call and the earlier ones: status error on odd series.
		add("quiet", fmt.Sprintf("q-%d", j/2), ptrace.SpanKindServer, ptrace.StatusCode(1+(j/2)%2))
	}
	o.call++
	return td
}

// redPoints adds up the calls and duration counts of md by series; with add, onto into.
func redPoints(t *testing.T, md pmetric.Metrics, into map[redKey]*redCounts) {
	t.Helper()
	get := func(attrs pcommon.Map) *redCounts {
		k := redKey{}
		if v, ok := attrs.Get(series.ServiceNameKey); ok {
			k.svc = v.Str()
		}
		if v, ok := attrs.Get(series.SpanNameKey); ok {
			k.name = v.Str()
		}
		if v, ok := attrs.Get(series.SpanKindKey); ok {
			k.kind = v.Str()
		}
		if v, ok := attrs.Get(series.StatusCodeKey); ok {
			k.status = v.Str()
		}
		if v, ok := attrs.Get(series.OverflowKey); ok {
			require.True(t, v.Bool())
			k.overflow = true
			// What exploded goes; what error rates need stays.
			require.Equal(t, capOverflowAttributes,
				slices.Sorted(maps.Keys(attrs.AsRaw())), "attributes of a cap overflow series")
		}
		if into[k] == nil {
			into[k] = &redCounts{}
		}
		return into[k]
	}
	for i := 0; i < md.ResourceMetrics().Len(); i++ {
		rm := md.ResourceMetrics().At(i)
		svc, _ := rm.Resource().Attributes().Get(series.ServiceNameKey)
		ms := rm.ScopeMetrics().At(0).Metrics()
		for j := 0; j < ms.Len(); j++ {
			m := ms.At(j)
			seen := map[string]bool{}
			for attrs := range dataPointAttributes(m) {
				k := attrString(attrs)
				require.False(t, seen[k], "two %s data points labelled %s", m.Name(), k)
				seen[k] = true
			}
			switch m.Type() {
			case pmetric.MetricTypeSum:
				for d := 0; d < m.Sum().DataPoints().Len(); d++ {
					dp := m.Sum().DataPoints().At(d)
					got, _ := dp.Attributes().Get(series.ServiceNameKey)
					require.Equal(t, svc.Str(), got.Str(), "series under the resource of its service")
					c := get(dp.Attributes())
					c.calls += dp.IntValue()
					c.exemplars += dp.Exemplars().Len()
				}
			case pmetric.MetricTypeHistogram:
				for d := 0; d < m.Histogram().DataPoints().Len(); d++ {
					dp := m.Histogram().DataPoints().At(d)
					c := get(dp.Attributes())
					c.durations += int64(dp.Count())
					c.sum += dp.Sum()
				}
			}
		}
	}
}

// A service whose span names explode goes over max_series_per_service; its new series go to
// overflow series that keep its service name, span kind and status code, with exact counts, so
// its call and error rates per kind stay exact. A quiet service keeps getting its own new
// series meanwhile. With max_series alone the budget is global: the overflow series are the
// same, but the quiet service's new series overflow once the noisy one has taken the room.
func TestCapOverflowKeepsKindAndStatus(t *testing.T) {
	for _, temporality := range []string{"AGGREGATION_TEMPORALITY_CUMULATIVE", "AGGREGATION_TEMPORALITY_DELTA"} {
		for _, tc := range []struct {
			name           string
			limits         map[string]any
			limit          string // the limit attribute of overflow_spans
			noisyRegular   int    // regular series the noisy service ends with
			quietProtected bool   // every quiet series is its own
		}{
			{"max_series_per_service", map[string]any{"max_series_per_service": 50, "max_series": 1000}, "max_series_per_service", 50, true},
			{"max_series", map[string]any{"max_series": 60}, "max_series", -1, false},
		} {
			t.Run(temporality+"/"+tc.name, func(t *testing.T) {
				raw := map[string]any{
					"aggregation_temporality": temporality,
					"metrics_flush_interval":  time.Second,
					"dimensions":              dims("http.method"),
					"exemplars":               map[string]any{"enabled": true},
					// By arrival, every series that has its own holds all its spans; by
					// traffic a promoted one holds those since its promotion (selection_test.go).
					"cap_selection": map[string]any{"by": "arrival"},
				}
				maps.Copy(raw, tc.limits)
				c, sink, clock, tel := startOurs(t, raw, true)
				traffic := &overflowTraffic{r: &randSource{n: 7}, sent: map[redKey]int64{}}
				const calls = 8
				for i := 0; i < calls; i++ {
					require.NoError(t, c.ConsumeTraces(context.Background(), traffic.next()))
					if i == calls/2 {
						flushOnce(t, c, sink, clock, time.Second)
					}
				}
				c.settle(t)
				byLimit := overflowSpansByLimit(t, tel)
				require.NoError(t, c.Shutdown(context.Background()))

				got := map[redKey]*redCounts{}
				if all := sink.AllMetrics(); temporality == "AGGREGATION_TEMPORALITY_DELTA" {
					for _, md := range all {
						redPoints(t, md, got)
					}
				} else {
					redPoints(t, all[len(all)-1], got)
				}

				sentGroups := map[redGroup]int64{}
				var sentAll, sentErrors int64
				for k, n := range traffic.sent {
					sentGroups[k.group()] += n
					sentAll += n
					if k.status == "STATUS_CODE_ERROR" {
						sentErrors += n
					}
				}
				gotGroups := map[redGroup]int64{}
				regular := map[string]int{}
				var gotAll, gotErrors, overflowCalls int64
				overflowExemplars := 0
				for k, n := range got {
					require.Equal(t, n.calls, n.durations, "calls and duration count of %v", k)
					gotGroups[k.group()] += n.calls
					gotAll += n.calls
					if k.status == "STATUS_CODE_ERROR" {
						gotErrors += n.calls
					}
					if k.overflow {
						overflowCalls += n.calls
						overflowExemplars += n.exemplars
						continue
					}
					regular[k.svc]++
					require.Equal(t, traffic.sent[k], n.calls, "calls of series %v", k)
				}
				require.Equal(t, sentAll, gotAll, "calls")
				require.Equal(t, sentErrors, gotErrors, "error calls")
				require.Equal(t, sentGroups, gotGroups, "calls per service, span kind and status code")
				require.Positive(t, overflowCalls)
				require.Positive(t, overflowExemplars, "cap overflow series keep exemplars")

				quiet := 0
				for k := range traffic.sent {
					if k.svc == "quiet" {
						quiet++
					}
				}
				if tc.quietProtected {
					require.Equal(t, tc.noisyRegular, regular["noisy"], "noisy series within max_series_per_service")
					require.Equal(t, quiet, regular["quiet"], "every quiet series is its own")
					for k := range got {
						require.False(t, k.overflow && k.svc == "quiet", "the quiet service has no overflow: %v", k)
					}
				} else {
					require.Equal(t, 60, regular["noisy"]+regular["quiet"], "series within max_series")
					require.Less(t, regular["quiet"], quiet, "with a global budget the quiet service overflows too")
				}
				// One overflow series per span kind and status code at most, unknown ones together.
				perService := map[string]int{}
				for k := range got {
					if k.overflow {
						perService[k.svc]++
					}
				}
				require.LessOrEqual(t, perService["noisy"], series.CapOverflowSlots)
				require.Greater(t, perService["noisy"], series.CapOverflowSlots/2, "the noisy overflow is split by kind and status")
				wantByLimit := map[string]int64{"max_series": 0, "max_series_per_service": 0}
				if tc.limit == "max_series" {
					delete(wantByLimit, "max_series_per_service") // not configured
				}
				wantByLimit[tc.limit] = overflowCalls
				require.Equal(t, wantByLimit, byLimit, "overflow_spans by limit")
			})
		}
	}
}

// aggregation_cardinality_limit keeps spanmetrics' overflow series, labelled
// otel.metric.overflow alone, whichever limit a resource reaches first; the caps' overflow
// series keep the built-ins the configuration does not exclude, and are the limit overflow
// series when all of them are excluded. Cap overflow series have exemplars, spanmetrics' has none.
func TestOverflowSeriesAttributes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		raw   map[string]any
		attrs []string // of the overflow data points, sorted
		max   int      // overflow data points per resource and metric
		limit string   // the only limit attribute of overflow_spans above 0
	}{
		{"cardinality limit first", map[string]any{"aggregation_cardinality_limit": 3, "max_series_per_service": 5},
			[]string{series.OverflowKey}, 1, "aggregation_cardinality_limit"},
		{"max_series_per_service first", map[string]any{"aggregation_cardinality_limit": 5, "max_series_per_service": 3},
			capOverflowAttributes, series.CapOverflowSlots, "max_series_per_service"},
		{"span.kind excluded", map[string]any{"max_series": 3, "exclude_dimensions": []any{series.SpanKindKey}},
			[]string{series.CollectorInstanceKey, series.OverflowKey, series.ServiceNameKey, series.StatusCodeKey}, series.StatusSlots, "max_series"},
		{"service.name and status.code excluded", map[string]any{"max_series": 3, "exclude_dimensions": []any{series.ServiceNameKey, series.StatusCodeKey}},
			[]string{series.CollectorInstanceKey, series.OverflowKey, series.SpanKindKey}, series.KindSlots, "max_series"},
		{"all three excluded", map[string]any{"max_series": 3, "exclude_dimensions": []any{series.ServiceNameKey, series.SpanKindKey, series.StatusCodeKey}},
			[]string{series.OverflowKey}, 1, "max_series"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := maps.Clone(tc.raw)
			raw["exemplars"] = map[string]any{"enabled": true}
			c, sink, _, tel := startOurs(t, raw, true)
			traffic := &overflowTraffic{r: &randSource{n: 3}, sent: map[redKey]int64{}}
			var want int64
			for i := 0; i < 4; i++ {
				td := traffic.next()
				want += countedSpans(td)
				require.NoError(t, c.ConsumeTraces(context.Background(), td))
			}
			c.settle(t)
			byLimit := overflowSpansByLimit(t, tel)
			require.NoError(t, c.Shutdown(context.Background()))
			md := sink.AllMetrics()[0]
			got := sumUp(md)
			require.Equal(t, want, got.calls)
			for limit, n := range byLimit {
				if limit == tc.limit {
					require.Equal(t, got.overflowCalls, n, "overflow_spans{limit=%q}", limit)
				} else {
					require.Zero(t, n, "overflow_spans{limit=%q}", limit)
				}
			}
			overflowPoints := 0
			for i := 0; i < md.ResourceMetrics().Len(); i++ {
				ms := md.ResourceMetrics().At(i).ScopeMetrics().At(0).Metrics()
				for j := 0; j < ms.Len(); j++ {
					n := 0
					for attrs := range dataPointAttributes(ms.At(j)) {
						if _, ok := attrs.Get(series.OverflowKey); ok {
							require.Equal(t, tc.attrs, slices.Sorted(maps.Keys(attrs.AsRaw())))
							n++
						}
					}
					require.LessOrEqual(t, n, tc.max, "overflow data points of %s", ms.At(j).Name())
					overflowPoints += n
					if m := ms.At(j); m.Type() == pmetric.MetricTypeSum {
						for d := 0; d < m.Sum().DataPoints().Len(); d++ {
							dp := m.Sum().DataPoints().At(d)
							if _, ok := dp.Attributes().Get(series.OverflowKey); ok && dp.Attributes().Len() == 1 {
								require.Zero(t, dp.Exemplars().Len(), "spanmetrics' overflow series has no exemplars")
							} else {
								require.Positive(t, dp.Exemplars().Len(), "exemplars on %s", attrString(dp.Attributes()))
							}
						}
					}
				}
			}
			require.Positive(t, overflowPoints)
		})
	}
}

// overflowSpansByLimit returns the overflow_spans counter by its limit attribute.
func overflowSpansByLimit(t *testing.T, tel *componenttest.Telemetry) map[string]int64 {
	t.Helper()
	m, err := tel.GetMetric("otelcol_connector_tracemetrics_overflow_spans")
	require.NoError(t, err)
	out := map[string]int64{}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		limit, ok := dp.Attributes.Value("limit")
		require.True(t, ok, "overflow_spans has a limit attribute")
		out[limit.AsString()] = dp.Value
	}
	return out
}

// dataPointAttributes yields the attributes of each data point of a sum or histogram.
func dataPointAttributes(m pmetric.Metric) func(func(pcommon.Map) bool) {
	return func(yield func(pcommon.Map) bool) {
		switch m.Type() {
		case pmetric.MetricTypeSum:
			for i := 0; i < m.Sum().DataPoints().Len(); i++ {
				if !yield(m.Sum().DataPoints().At(i).Attributes()) {
					return
				}
			}
		case pmetric.MetricTypeHistogram:
			for i := 0; i < m.Histogram().DataPoints().Len(); i++ {
				if !yield(m.Histogram().DataPoints().At(i).Attributes()) {
					return
				}
			}
		}
	}
}

// A cap overflow series that has expired comes back as a new series: in the cumulative output
// its count starts again from the spans after its return (a counter reset, as for any series),
// and no span lands in a series that was dropped or in a slot of another kind or status.
func TestCapOverflowSeriesExpireAndReturn(t *testing.T) {
	c, sink, clock, _ := startOurs(t, map[string]any{
		"metrics_flush_interval": time.Second,
		"series_expiration":      2 * time.Second,
		"max_series_per_service": 20,
	}, true)
	traffic := &overflowTraffic{r: &randSource{n: 11}, sent: map[redKey]int64{}}
	for i := 0; i < 3; i++ {
		require.NoError(t, c.ConsumeTraces(context.Background(), traffic.next()))
	}
	for i := 0; i < 3; i++ {
		flushOnce(t, c, sink, clock, time.Second) // idle past series_expiration: all expire
	}
	traffic.sent = map[redKey]int64{} // what the final cumulative export must hold
	for i := 0; i < 3; i++ {
		require.NoError(t, c.ConsumeTraces(context.Background(), traffic.next()))
	}
	require.NoError(t, c.Shutdown(context.Background()))
	all := sink.AllMetrics()
	got := map[redKey]*redCounts{}
	redPoints(t, all[len(all)-1], got)

	want, gotGroups := map[redGroup]int64{}, map[redGroup]int64{}
	for k, n := range traffic.sent {
		want[k.group()] += n
	}
	regular := 0
	for k, n := range got {
		gotGroups[k.group()] += n.calls
		if !k.overflow {
			regular++
			require.Equal(t, traffic.sent[k], n.calls, "calls of series %v", k)
		}
	}
	require.Equal(t, want, gotGroups, "calls per service, span kind and status code since the return")
	require.Equal(t, 20+len(slices.Collect(func(yield func(string) bool) {
		for k := range traffic.sent {
			if k.svc == "quiet" && !yield(k.name) {
				return
			}
		}
	})), regular, "20 noisy series again, and the quiet ones")

	// That every slot points at a live cap overflow series of its own kind and status, and
	// every such series has its slot: internal/aggregate TestCapOverflowSlotsPointAtTheirSeries.
}

// The slot of a series' cap overflow series is the same whether read from the series' key or
// from the overflow key built from it; slots and output labels correspond one to one; and the
// overflow key carries the built-ins the layout includes, whatever is excluded, with
// otel.status_code under the useOtelPrefix gate and the collector instance ID under its gate.
func TestCapOverflowKeys(t *testing.T) {
	for _, tc := range []struct {
		exclude []string
		gates   followedGates
	}{
		{nil, followedGates{}},
		{nil, followedGates{useOtelStatusCode: true, includeCollectorInstanceID: true}},
		{[]string{series.SpanNameKey}, followedGates{}},
		{[]string{series.SpanKindKey}, followedGates{}},
		{[]string{series.StatusCodeKey}, followedGates{}},
		{[]string{series.ServiceNameKey, series.SpanKindKey}, followedGates{}},
		{[]string{series.ServiceNameKey, series.SpanKindKey, series.StatusCodeKey}, followedGates{}},
	} {
		t.Run(fmt.Sprint(tc.exclude, tc.gates), func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			cfg.ExcludeDimensions = tc.exclude
			cfg.Dimensions = []Dimension{{Name: "http.method"}}
			l, err := newLayout(cfg, tc.gates, "instance-1")
			require.NoError(t, err)
			f := l.Families[l.CallsFamily]
			spanAttrs := pcommon.NewMap()
			spanAttrs.PutStr("http.method", "GET")
			dims := series.Dims[traceview.Pdata]{
				Span:     traceviewtest.Attrs[traceview.Pdata](t, spanAttrs),
				Resource: make([]series.DimValue, len(f.Dims)),
			}
			labelsOf, slotOf := map[int]string{}, map[string]int{}
			for _, kind := range trafficKinds {
				for _, status := range trafficStatuses {
					h := series.KeyHead{ResHash: 42, Service: "checkout", Name: "GET /users/" + fmt.Sprint(kind, status), Kind: kind, Status: status}
					key := series.AppendKey(&l, nil, f, &h, &dims, nil)
					okey := l.AppendCapOverflowKey(nil, key)
					require.True(t, series.IsOverflowKey(okey))
					require.Equal(t, l.HasCapOverflow(), series.IsCapOverflowKey(okey))
					if !l.HasCapOverflow() {
						continue
					}
					slot := l.SeriesOverflowSlot(key)
					require.Equal(t, slot, l.CapOverflowSlot(okey))
					require.GreaterOrEqual(t, slot, 0)
					require.Less(t, slot, series.CapOverflowSlots)

					attrs := pcommon.NewMap()
					l.PutAttributes(okey, attrs, nil)
					want := pcommon.NewMap()
					if l.WithService {
						want.PutStr(series.ServiceNameKey, "checkout")
					}
					if l.WithKind {
						want.PutStr(series.SpanKindKey, series.KindName(series.KindByte(kind)))
					}
					switch {
					case !l.WithStatus:
					case !tc.gates.useOtelStatusCode:
						want.PutStr(series.StatusCodeKey, series.StatusName(series.StatusByte(status)))
					case status == ptrace.StatusCodeError:
						want.PutStr(series.OtelStatusCodeKey, "ERROR")
					case status == ptrace.StatusCodeOk:
						want.PutStr(series.OtelStatusCodeKey, "OK")
					}
					if tc.gates.includeCollectorInstanceID {
						want.PutStr(series.CollectorInstanceKey, "instance-1")
					}
					want.PutBool(series.OverflowKey, true)
					require.Equal(t, want.AsRaw(), attrs.AsRaw())

					labels := attrString(attrs)
					if prev, ok := labelsOf[slot]; ok {
						require.Equal(t, prev, labels, "one slot, one label set")
					}
					if prev, ok := slotOf[labels]; ok {
						require.Equal(t, prev, slot, "one label set, one slot")
					}
					labelsOf[slot], slotOf[labels] = labels, slot
				}
			}
		})
	}
}

// The events metric's series (keyed per span event) overflow the same way, with exact totals.
func TestCapOverflowOfEvents(t *testing.T) {
	c, sink, _, _ := startOurs(t, map[string]any{
		"events":                 map[string]any{"enabled": true, "dimensions": dims("exception.type")},
		"max_series_per_service": 3,
	}, true)
	r := newRand(21)
	var want int64
	for i := 0; i < 10; i++ {
		td := genTraces(r, 100, genOptions{services: 3, names: 20, events: true})
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					want += int64(sp.Events().Len())
				}
			}
		}
		require.NoError(t, c.ConsumeTraces(context.Background(), td))
	}
	require.NoError(t, c.Shutdown(context.Background()))
	md := sink.AllMetrics()[0]
	var got, overflow int64
	for _, rm := range md.ResourceMetrics().All() {
		for _, m := range rm.ScopeMetrics().At(0).Metrics().All() {
			if m.Name() != "traces.span.metrics.events" {
				continue
			}
			for _, dp := range m.Sum().DataPoints().All() {
				got += dp.IntValue()
				if _, ok := dp.Attributes().Get(series.OverflowKey); ok {
					overflow += dp.IntValue()
					require.Equal(t, capOverflowAttributes,
						slices.Sorted(maps.Keys(dp.Attributes().AsRaw())))
				}
			}
		}
	}
	require.Equal(t, want, got, "events")
	require.Positive(t, overflow)
}
