package tracemetrics

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/metadata"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/reduce"
)

// clusteringConfig is delta temporality (each flush holds only what was sent since the last)
// with span_name.clustering as given.
func clusteringConfig(clustering map[string]any) map[string]any {
	return map[string]any{
		"aggregation_temporality": delta,
		"span_name":               map[string]any{"clustering": clustering},
	}
}

// word spells i in lower-case letters: no ID heuristic takes it.
func word(i int) string {
	b := []byte{'w'}
	for {
		b = append(b, byte('a'+i%26))
		if i /= 26; i == 0 {
			return string(b)
		}
	}
}

// named returns one span per name, of service svc.
func named(svc string, names ...string) []spanNameCase {
	out := make([]spanNameCase, len(names))
	for i, n := range names {
		out[i] = spanNameCase{service: svc, name: n}
	}
	return out
}

// send consumes the spans and waits until the aggregator has applied them, and so learned
// what they taught.
func send(t *testing.T, r *running, cases []spanNameCase) {
	t.Helper()
	r.consume(tracesOf(t, cases))
	r.conn.(*connectorImp).settle(t)
}

func TestClusteringSpanNames(t *testing.T) {
	r := startConnector(t, NewFactory(), clusteringConfig(map[string]any{"enabled": true}))
	cases := named("a", "GET /orders/12345", "GET /orders/777", "/users/1/data", "/users/1/settings",
		"get 123e4567-e89b-12d3-a456-426614174000", "healthz")
	cases = append(cases,
		// A route is the semantic conventions' business: never clustered, with the layer off.
		spanNameCase{service: "a", kind: ptrace.SpanKindServer, name: "GET /orders/55",
			attrs: map[string]any{"http.route": "/orders/{id}"}},
		spanNameCase{service: "b", name: "GET /orders/1"})
	send(t, r, cases)
	require.Equal(t, map[string]int64{
		"a|GET /orders/{id}":     2,
		"a|/users/{id}/data":     1,
		"a|/users/{id}/settings": 1,
		"a|get {id}":             1,
		"a|healthz":              1,
		"a|GET /orders/55":       1,
		"b|GET /orders/{id}":     1,
	}, callsByName(t, r))
}

// Names the earlier layers renamed are theirs: clustering leaves them as they are.
func TestClusteringAfterSemconvAndRules(t *testing.T) {
	raw := rulesConfig(true, map[string]any{"match": `^job (\d+)$`, "replace": "job 7 of ${1}"})
	raw["aggregation_temporality"] = delta
	raw["span_name"].(map[string]any)["clustering"] = map[string]any{"enabled": true}
	r := startConnector(t, NewFactory(), raw)
	send(t, r, []spanNameCase{
		{service: "a", kind: ptrace.SpanKindClient, name: "SELECT 1",
			attrs: map[string]any{"db.operation.name": "SELECT", "db.collection.name": "t1"}},
		{service: "a", name: "job 12"},
		{service: "a", name: "task 12"},
		// A route that from_semantic_conventions does not name this span by (a client span)
		// still keeps clustering off it, as with that layer off.
		{service: "a", kind: ptrace.SpanKindClient, name: "GET /orders/55",
			attrs: map[string]any{"http.request.method": "GET", "http.route": "/orders/{id}"}},
		{service: "a", kind: ptrace.SpanKindClient, name: "GET /orders/56",
			attrs: map[string]any{"http.request.method": "GET", "http.route": ""}},
	})
	require.Equal(t, map[string]int64{"a|SELECT t1": 1, "a|job 7 of 12": 1, "a|task {id}": 1,
		"a|GET /orders/55": 1, "a|GET /orders/{id}": 1}, callsByName(t, r))
}

// Up to max_children distinct words at a position stay apart; the learner merges the
// position when one more arrives, and from then on every word there is {*}.
func TestClusteringMergesSiblingsAboveMaxChildren(t *testing.T) {
	const maxChildren = 4
	r := startConnector(t, NewFactory(), clusteringConfig(map[string]any{"enabled": true, "max_children": maxChildren}))
	var names []string
	want := map[string]int64{}
	for i := range maxChildren {
		names = append(names, "GET /users/"+word(i))
		want["s|GET /users/"+word(i)] = 1
	}
	for range 2 {
		send(t, r, named("s", names...))
		require.Equal(t, want, callsByName(t, r), "siblings up to max_children stay apart")
	}
	send(t, r, named("s", "GET /users/"+word(maxChildren)))
	require.Equal(t, map[string]int64{"s|GET /users/" + word(maxChildren): 1}, callsByName(t, r),
		"the span that teaches the merge keeps its name")
	send(t, r, named("s", append(names, "GET /users/"+word(99), "GET /users/x/orders/5")...))
	require.Equal(t, map[string]int64{"s|GET /users/{*}": maxChildren + 1, "s|GET /users/{*}/orders/{id}": 1}, callsByName(t, r))
}

// dry_run learns and counts, and the metrics are those of clustering off, flush for flush;
// it counts exactly the spans clustering on renames.
func TestClusteringDryRunOutputIsOff(t *testing.T) {
	start := func(clustering map[string]any) (*running, *componenttest.Telemetry) {
		c, sink, clock, tel := startOurs(t, clusteringConfig(clustering), true)
		return &running{t: t, conn: c, sink: sink, clock: clock, interval: time.Minute}, tel
	}
	off, _ := start(map[string]any{"enabled": false})
	dry, dryTel := start(map[string]any{"enabled": true, "dry_run": true, "max_children": 3})
	on, onTel := start(map[string]any{"enabled": true, "max_children": 3})
	rnd := newRand(11)
	for flush := range 3 {
		for call := range 5 {
			var cases []spanNameCase
			for i := range 100 {
				svc := fmt.Sprintf("svc-%d", rnd.IntN(3))
				var name string
				switch rnd.IntN(4) {
				case 0:
					name = fmt.Sprintf("GET /orders/%d", rnd.IntN(1000))
				case 1:
					name = "GET /users/" + word(rnd.IntN(6)) + "/profile"
				case 2:
					name = fmt.Sprintf("op-%d", rnd.IntN(5))
				default:
					name = fmt.Sprintf("POST /carts/%d/items/%s", flush*1000+call*100+i, word(rnd.IntN(2)))
				}
				cases = append(cases, spanNameCase{service: svc, kind: ptrace.SpanKind(rnd.IntN(6)), name: name})
			}
			for _, r := range []*running{off, dry, on} {
				send(t, r, cases)
			}
		}
		want := points(t, off.flush(), true)
		requireSamePoints(t, want, points(t, dry.flush(), true))
		require.Less(t, len(points(t, on.flush(), true)), len(want), "clustering on has fewer series")
	}
	dryRenamed := counterValues(t, dryTel, "otelcol_connector_tracemetrics_dry_run_renamed_spans", "")
	renamed := counterValues(t, onTel, "otelcol_connector_tracemetrics_renamed_spans", "layer")
	require.Positive(t, renamed["clustering"])
	require.Equal(t, map[string]int64{"": renamed["clustering"]}, dryRenamed)
	_, err := dryTel.GetMetric("otelcol_connector_tracemetrics_renamed_spans")
	require.Error(t, err, "a dry run renames nothing: no renamed_spans series")
	_, err = onTel.GetMetric("otelcol_connector_tracemetrics_dry_run_renamed_spans")
	require.Error(t, err)
}

// counterValues returns a counter's data points by the value of attribute key ("" when the
// points have no attributes).
func counterValues(t *testing.T, tel *componenttest.Telemetry, name, key string) map[string]int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	require.NoError(t, err)
	out := map[string]int64{}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, dp := range d.DataPoints {
			if key == "" {
				require.Zero(t, dp.Attributes.Len())
				out[""] = dp.Value
				continue
			}
			v, ok := dp.Attributes.Value(attribute.Key(key))
			require.True(t, ok)
			require.Equal(t, 1, dp.Attributes.Len())
			out[v.AsString()] = dp.Value
		}
	case metricdata.Gauge[int64]:
		for _, dp := range d.DataPoints {
			require.Zero(t, dp.Attributes.Len())
			out[""] = dp.Value
		}
	}
	return out
}

// Whatever clustering does to names, every span is counted once, in its service: calls per
// service equal the spans sent, with names that churn, merge, expire and overflow the
// template bound, from concurrent callers.
func TestClusteringKeepsTotalsPerService(t *testing.T) {
	c, sink, clock, _ := startOurs(t, clusteringConfig(map[string]any{
		"enabled": true, "max_children": 5, "max_templates_per_service": 20, "template_expiration": "2m",
	}), true)
	r := &running{t: t, conn: c, sink: sink, clock: clock, interval: time.Minute}
	sent := map[string]int64{}
	rnd := newRand(5)
	for flush := range 4 {
		var inputs []ptrace.Traces
		for call := range 20 {
			var cases []spanNameCase
			for i := range 200 {
				svc := fmt.Sprintf("svc-%d", rnd.IntN(4))
				n := flush*100_000 + call*1000 + i
				var name string
				switch rnd.IntN(3) {
				case 0:
					name = word(n) + " /x" // a new first word: never merged, bounded by eviction
				case 1:
					name = "GET /u/" + word(n) + "/" + word(n%7)
				default:
					name = fmt.Sprintf("GET /o/%d", n)
				}
				cases = append(cases, spanNameCase{service: svc, name: name})
				sent[svc]++
			}
			inputs = append(inputs, tracesOf(t, cases))
		}
		consumeParallel(c, inputs, 4, len(inputs))
		// A tick that finds the aggregator inside a drain flushes at the start of its next
		// round, before that round's batches: settle so that this flush holds every call.
		c.settle(t)
		got := map[string]int64{}
		for key, calls := range callsByName(t, r) {
			svc, _, _ := strings.Cut(key, "|")
			got[svc] += calls
		}
		require.Equal(t, sent, got)
		clear(sent)
		require.LessOrEqual(t, c.names.Clusterer().Templates(), int64(4*20))
	}
}

func TestClusteringTelemetry(t *testing.T) {
	c, _, _, tel := startOurs(t, clusteringConfig(map[string]any{"enabled": true, "max_children": 2}), true)
	require.Equal(t, map[string]int64{"clustering": 0}, counterValues(t, tel, "otelcol_connector_tracemetrics_renamed_spans", "layer"),
		"the layer's series from 0")
	r := &running{t: t, conn: c}
	send(t, r, named("a", "GET /orders/1", "GET /orders/2", "GET /x/"+word(1), "GET /x/"+word(2), "GET /x/"+word(3), "op"))
	require.Equal(t, map[string]int64{"clustering": 2}, counterValues(t, tel, "otelcol_connector_tracemetrics_renamed_spans", "layer"))
	// GET /orders/{id}, GET /x/{*} (merged at the third word), op.
	require.Equal(t, map[string]int64{"": 3}, counterValues(t, tel, "otelcol_connector_tracemetrics_span_name_templates", ""))
	send(t, r, named("b", "GET /x/"+word(4)))
	require.Equal(t, map[string]int64{"clustering": 2}, counterValues(t, tel, "otelcol_connector_tracemetrics_renamed_spans", "layer"),
		"service b's positions are its own")
	require.Equal(t, map[string]int64{"": 4}, counterValues(t, tel, "otelcol_connector_tracemetrics_span_name_templates", ""))

	_, _, _, offTel := startOurs(t, map[string]any{}, true)
	_, err := offTel.GetMetric("otelcol_connector_tracemetrics_span_name_templates")
	require.Error(t, err, "no templates gauge without clustering")
}

func TestClusteringValidate(t *testing.T) {
	for _, tc := range []struct {
		clustering map[string]any
		wantErr    string
	}{
		{map[string]any{"max_children": 0}, "span_name.clustering.max_children: 0, must be 1..10000"},
		{map[string]any{"max_templates_per_service": -1}, "span_name.clustering.max_templates_per_service: -1, must be 1..100000"},
		{map[string]any{"max_templates_per_service": 100_001}, "span_name.clustering.max_templates_per_service: 100001"},
		{map[string]any{"template_expiration": "-1s"}, "span_name.clustering.template_expiration: -1s, must be positive or 0 (never)"},
		{map[string]any{"enabled": true, "template_expiration": 0}, ""},
	} {
		cfg := createDefaultConfig().(*Config)
		require.NoError(t, confmap.NewFromStringMap(map[string]any{"span_name": map[string]any{"clustering": tc.clustering}}).Unmarshal(cfg))
		err := cfg.Validate()
		if tc.wantErr == "" {
			require.NoError(t, err)
			continue
		}
		require.ErrorContains(t, err, tc.wantErr)
	}
}

func TestLoadClusteringConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "span_name.yaml"))
	require.NoError(t, err)
	load := func(id string) (*Config, error) {
		cfg := createDefaultConfig().(*Config)
		sub, err := cm.Sub(component.NewIDWithName(metadata.Type, id).String())
		require.NoError(t, err)
		require.NoError(t, sub.Unmarshal(cfg))
		return cfg, confmap.Validate(cfg)
	}
	cfg, err := load("clustering")
	require.NoError(t, err)
	require.Equal(t, ClusteringConfig{Enabled: true, DryRun: true, MaxChildren: 20, MaxTemplatesPerService: 500, TemplateExpiration: 30 * time.Minute},
		cfg.SpanName.Clustering, "max_templates_per_service keeps its default")
	require.Equal(t, defaultClusteringConfig(), createDefaultConfig().(*Config).SpanName.Clustering)
	require.False(t, createDefaultConfig().(*Config).SpanName.Clustering.Enabled, "off by default")
	_, err = load("invalid_clustering")
	require.ErrorContains(t, err, "span_name.clustering.max_children: 0, must be")
}

// Names that never repeat but share a template cost nothing once the template is learned:
// the decision is made in the batch's scratch, against the published snapshot.
func TestClusteringSteadyStateAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	r := startConnector(t, NewFactory(), clusteringConfig(map[string]any{"enabled": true, "max_children": 10}))
	c := r.conn.(*connectorImp)
	var batches []ptrace.Traces
	for b := range 64 {
		var cases []spanNameCase
		for i := range 200 {
			n := b*200 + i
			names := []string{fmt.Sprintf("GET /orders/%d", n), "GET /users/" + word(n) + "/data", fmt.Sprintf("op-%d", n%5)}
			cases = append(cases, spanNameCase{service: fmt.Sprintf("svc-%d", n%3), name: names[n%3]})
		}
		batches = append(batches, tracesOf(t, cases))
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
	before := c.names.Renamed(reduce.RenamedByClustering)
	allocs := testing.AllocsPerRun(2048, call)
	require.LessOrEqual(t, allocs, float64(maxAllocsPerCall), "allocations per 200-span call")
	require.Greater(t, c.names.Renamed(reduce.RenamedByClustering)-before, int64(2048*100), "the measured calls renamed spans")
}
