package tracemetrics

import (
	"testing"
	"time"
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
}
