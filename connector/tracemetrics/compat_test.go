package tracemetrics

import (
	"math"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/connector/spanmetricsconnector"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// The same traces through spanmetrics v0.165.1 and tracemetrics, with the same configuration
// (tracemetrics only renamed), give the same data points: names, units, temporality,
// attributes, values, histogram buckets. Timestamps are compared too where the two agree by
// design; the scope name differs.
func TestCompatibilityWithSpanmetrics(t *testing.T) {
	common := func(extra map[string]any) map[string]any {
		m := map[string]any{
			"metrics_flush_interval": 15 * time.Second,
			"dimensions":             dims("http.method", "http.status_code", "tenant=none", "region"),
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name string
		raw  map[string]any
		gen  genOptions
	}{
		{"cumulative explicit", common(nil), genOptions{services: 4, names: 6}},
		{"delta explicit", common(map[string]any{"aggregation_temporality": "AGGREGATION_TEMPORALITY_DELTA"}), genOptions{services: 4, names: 6}},
		{"cumulative explicit custom buckets seconds", common(map[string]any{
			"histogram": map[string]any{"unit": "s", "explicit": map[string]any{"buckets": []any{"1ms", "10ms", "100ms", "250ms", "1s"}}},
		}), genOptions{services: 3, names: 5}},
		{"cumulative exponential", common(map[string]any{
			"histogram": map[string]any{"exponential": map[string]any{"max_size": 12}},
		}), genOptions{services: 3, names: 5, wide: true}},
		{"delta exponential default size", common(map[string]any{
			"aggregation_temporality": "AGGREGATION_TEMPORALITY_DELTA",
			"histogram":               map[string]any{"exponential": map[string]any{}},
		}), genOptions{services: 3, names: 5, wide: true}},
		{"bad input", common(nil), genOptions{services: 3, names: 4, bad: true}},
		{"bad input delta exponential", common(map[string]any{
			"aggregation_temporality": "AGGREGATION_TEMPORALITY_DELTA",
			"histogram":               map[string]any{"exponential": map[string]any{"max_size": 20}},
		}), genOptions{services: 3, names: 4, bad: true, wide: true}},
		{"split calls and duration dimensions, events, exclusions, scopes", map[string]any{
			"metrics_flush_interval":        15 * time.Second,
			"dimensions":                    dims("http.method"),
			"calls_dimensions":              dims("http.status_code"),
			"histogram":                     map[string]any{"dimensions": dims("tenant=none")},
			"exclude_dimensions":            []any{"span.kind"},
			"include_instrumentation_scope": []any{"lib-1"},
			"events":                        map[string]any{"enabled": true, "dimensions": dims("exception.type", "region")},
			"namespace":                     "red",
		}, genOptions{services: 3, names: 5, events: true}},
		{"histogram disabled, resource key attributes", common(map[string]any{
			"histogram":                       map[string]any{"disable": true},
			"resource_metrics_key_attributes": []any{"service.name", "host.name"},
		}), genOptions{services: 5, names: 4}},
		{"cardinality limit cumulative", common(map[string]any{"aggregation_cardinality_limit": 7}), genOptions{services: 2, names: 8}},
		{"cardinality limit delta", common(map[string]any{
			"aggregation_cardinality_limit": 5, "aggregation_temporality": "AGGREGATION_TEMPORALITY_DELTA",
		}), genOptions{services: 2, names: 8}},
		// spanmetrics keys series by the string form of each value: an int 200 and a string
		// "200" are one series, labelled with the first span's value (delta temporality
		// rebuilds its attributes every interval, so cumulative only).
		{"values of different types with one string form", common(map[string]any{
			"dimensions": dims("http.method", "http.status_code", "ratio"),
		}), genOptions{services: 2, names: 3, mixed: true}},
		{"exemplars", common(map[string]any{"exemplars": map[string]any{"enabled": true, "max_per_data_point": 100}}), genOptions{services: 2, names: 30}},
		// Glob dimensions (spanmetrics v0.165.1): every matching key of the span, else the
		// event, else the resource, each its own attribute; values of several types with one
		// string form are one series, as for named dimensions.
		{"glob dimensions", common(map[string]any{
			"dimensions": append(dims("http.method", "tenant=none"), globDim("k8s.*.name"), globDim("db.**")),
		}), genOptions{services: 4, names: 4, globs: true, mixed: true}},
		// Globs in every list: split calls and duration families, events; a glob of
		// calls_dimensions matching a name of dimensions (spanmetrics writes the attribute twice
		// over, with the same value).
		{"glob dimensions split, events, delta", map[string]any{
			"metrics_flush_interval":  15 * time.Second,
			"aggregation_temporality": "AGGREGATION_TEMPORALITY_DELTA",
			"dimensions":              []any{dims("http.method")[0], globDim("k8s.*.name")},
			"calls_dimensions":        []any{globDim("http.*")},
			"histogram":               map[string]any{"dimensions": []any{globDim("db.**")}},
			"events":                  map[string]any{"enabled": true, "dimensions": append(dims("region"), globDim("exception.*"))},
		}, genOptions{services: 3, names: 4, events: true, globs: true}},
		// Every series carries collector.instance.id by default (spanmetrics v0.165.1); excluding
		// it is how spanmetrics' README says to turn it off.
		{"collector.instance.id excluded", common(map[string]any{
			"exclude_dimensions": []any{"collector.instance.id", "span.kind"},
		}), genOptions{services: 3, names: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.raw["aggregation_temporality"] != nil {
				// spanmetrics forgets the last flush time of a delta series beyond this LRU
				// size (default 10 × resource_metrics_cache_size, at least 1000); tracemetrics
				// keeps it for every series.
				tt.raw["metric_timestamp_cache_size"] = 1 << 20
			}
			compareRun(t, tt.raw, tt.gen, 3, 4, 150, true)
		})
	}
}

// With a hash function that collides constantly, series stay apart: keys are compared byte
// for byte on every hash hit, in the producer's batch table and in the aggregator's index.
func TestHashCollisionsAreExact(t *testing.T) {
	colliding := oursWith(func(d *deps) { d.keyHash = func(b []byte) uint64 { return uint64(len(b) % 3) } })
	raw := map[string]any{
		"metrics_flush_interval": 15 * time.Second,
		"dimensions":             dims("http.method", "http.status_code", "tenant=none", "region"),
	}
	compareRunWith(t, colliding, raw, genOptions{services: 4, names: 6, bad: true}, 2, 3, 100, true)
	// Glob dimensions: keys whose identity ends before the types and the match count.
	raw["dimensions"] = append(dims("http.method"), globDim("k8s.*.name"), globDim("db.**"))
	compareRunWith(t, colliding, raw, genOptions{services: 4, names: 6, bad: true, globs: true, mixed: true}, 2, 3, 100, true)
}

// Spans kept by probability sampling count their adjusted count from the tracestate threshold
// in both connectors since spanmetrics v0.165.1: calls, histogram counts, buckets and sums,
// events; with enable_metrics_sampling_method, sampling.method splits the series into
// "extrapolated" and "counted". The thresholds here have integer adjusted counts (powers of
// two), which spanmetrics' stochastic rounding and our carried remainders give exactly; a
// malformed or absent threshold counts 1 in both.
func TestCompatibilityWithSpanmetricsSampling(t *testing.T) {
	base := func(extra map[string]any) map[string]any {
		m := map[string]any{
			"metrics_flush_interval": 15 * time.Second,
			"dimensions":             dims("http.method", "tenant=none"),
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	delta := map[string]any{"aggregation_temporality": "AGGREGATION_TEMPORALITY_DELTA", "metric_timestamp_cache_size": 1 << 20}
	tests := []struct {
		name string
		raw  map[string]any
		gen  genOptions
	}{
		{"cumulative explicit", base(nil), genOptions{services: 3, names: 5, sampled: true}},
		{"delta exponential, events", base(map[string]any{
			"aggregation_temporality":     delta["aggregation_temporality"],
			"metric_timestamp_cache_size": delta["metric_timestamp_cache_size"],
			"histogram":                   map[string]any{"exponential": map[string]any{"max_size": 30}},
			"events":                      map[string]any{"enabled": true, "dimensions": dims("exception.type")},
		}), genOptions{services: 3, names: 4, sampled: true, events: true, wide: true}},
		{"split calls and duration", base(map[string]any{
			"calls_dimensions": dims("http.status_code"),
		}), genOptions{services: 2, names: 4, sampled: true}},
		{"sampling method cumulative", base(map[string]any{
			"enable_metrics_sampling_method": true,
			"events":                         map[string]any{"enabled": true, "dimensions": dims("exception.type")},
		}), genOptions{services: 3, names: 4, sampled: true, events: true}},
		{"sampling method delta, cardinality limit", base(map[string]any{
			"enable_metrics_sampling_method": true,
			"aggregation_temporality":        delta["aggregation_temporality"],
			"metric_timestamp_cache_size":    delta["metric_timestamp_cache_size"],
			"aggregation_cardinality_limit":  12,
		}), genOptions{services: 2, names: 6, sampled: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			compareRun(t, tt.raw, tt.gen, 3, 3, 150, true)
		})
	}
}

// With an adjusted count that is not an integer (th:55555555555555, p = 2/3, 1.5 spans per
// span), spanmetrics rounds each span at random to 1 or 2 and tracemetrics carries the
// remainder per series: the totals agree in expectation, spanmetrics' within its random
// error (σ = √(N/4), 6σ allowed here), ours within 1 of the exact total per series.
//
// spanmetrics v0.165.1 keeps the rounded count of the last tracestate parsed in a request and
// reuses it while the next spans repeat that tracestate, so a request whose spans all carry
// one tracestate counts all of them 1 or all of them 2: the spans below alternate two
// tracestates of the same threshold, so that it rounds each one. The same request with one
// tracestate is the second half: spanmetrics counts n or 2n, tracemetrics 1.5 n.
func TestNonIntegerAdjustedCountsAgreeWithSpanmetricsOnAverage(t *testing.T) {
	const n = 4000
	request := func(traceStates ...string) ptrace.Traces {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr(series.ServiceNameKey, "svc")
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		for i := range n {
			sp := spans.AppendEmpty()
			sp.SetName("op")
			sp.SetStartTimestamp(1)
			sp.SetEndTimestamp(pcommon.Timestamp(1 + i*1000))
			sp.TraceState().FromRaw(traceStates[i%len(traceStates)])
		}
		return td
	}
	total := func(md pmetric.Metrics) (calls int64, count uint64) {
		for _, rm := range md.ResourceMetrics().All() {
			for _, m := range rm.ScopeMetrics().At(0).Metrics().All() {
				switch m.Type() {
				case pmetric.MetricTypeSum:
					for _, dp := range m.Sum().DataPoints().All() {
						calls += dp.IntValue()
					}
				case pmetric.MetricTypeHistogram:
					for _, dp := range m.Histogram().DataPoints().All() {
						count += dp.Count()
					}
				}
			}
		}
		return calls, count
	}
	raw := map[string]any{"aggregation_temporality": "AGGREGATION_TEMPORALITY_DELTA"}
	stock := startConnector(t, spanmetricsconnector.NewFactory(), raw)
	ours := startConnector(t, NewFactory(), raw)
	const exact = 1.5 * n

	td := request("ot=th:55555555555555", "ot=th:55555555555555;rv:ffffffffffffff")
	stock.consume(td)
	ours.consume(td)
	gotCalls, gotCount := total(settledFlush(t, ours))
	require.InDelta(t, exact, float64(gotCalls), 1)
	require.Equal(t, uint64(gotCalls), gotCount)
	wantCalls, wantCount := total(stock.flush())
	require.InDelta(t, exact, float64(wantCalls), 6*math.Sqrt(n/4.0), "spanmetrics within its random error")
	require.Equal(t, uint64(wantCalls), wantCount)

	td = request("ot=th:55555555555555")
	stock.consume(td)
	ours.consume(td)
	gotCalls, _ = total(settledFlush(t, ours))
	require.InDelta(t, exact, float64(gotCalls), 1)
	wantCalls, _ = total(stock.flush())
	require.Contains(t, []int64{n, 2 * n}, wantCalls, "spanmetrics rounds the request's spans alike")
}

// series_expiration (spanmetrics v0.165.1) drops a single series once it has seen no span for
// that long; it is exported at the flush that finds it expired, then no more, and comes back
// as a new series. Many span names and few spans per interval leave series idle for a few
// intervals, so some expire while their resource stays.
//
// With delta temporality spanmetrics keeps no series between flushes anyway, and a series
// that comes back starts at its last export if its timestamp cache still has it; tracemetrics
// has forgotten an expired series, and its delta starts at the flush before its return (the
// values are the same; README.md lists the difference). Start times are compared with
// cumulative temporality only.
func TestCompatibilityWithSpanmetricsSeriesExpiration(t *testing.T) {
	for _, temporality := range []string{"AGGREGATION_TEMPORALITY_CUMULATIVE", "AGGREGATION_TEMPORALITY_DELTA"} {
		t.Run(temporality, func(t *testing.T) {
			raw := map[string]any{
				"metrics_flush_interval":      10 * time.Second,
				"series_expiration":           25 * time.Second,
				"aggregation_temporality":     temporality,
				"metric_timestamp_cache_size": 1 << 20,
				"dimensions":                  dims("http.method"),
				"events":                      map[string]any{"enabled": true, "dimensions": dims("exception.type")},
			}
			withStart := temporality == "AGGREGATION_TEMPORALITY_CUMULATIVE"
			compareRun(t, raw, genOptions{services: 2, names: 25, events: true}, 8, 1, 40, withStart)
		})
	}
}
