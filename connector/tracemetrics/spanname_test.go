package tracemetrics

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/metadata"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/reduce"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// spanNameCase is one span: its service, kind, name and attributes, and the span.name its
// series must carry.
type spanNameCase struct {
	desc    string
	service string
	kind    ptrace.SpanKind
	name    string
	attrs   map[string]any
	want    string
}

// callsByName returns the calls per "service|span.name" of one flush of r.
func callsByName(t *testing.T, r *running) map[string]int64 {
	t.Helper()
	md := r.flush()
	out := map[string]int64{}
	for i := 0; i < md.ResourceMetrics().Len(); i++ {
		rm := md.ResourceMetrics().At(i)
		for j := 0; j < rm.ScopeMetrics().Len(); j++ {
			ms := rm.ScopeMetrics().At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				if m.Type() != pmetric.MetricTypeSum || m.Name() != "traces.span.metrics.calls" {
					continue
				}
				for d := 0; d < m.Sum().DataPoints().Len(); d++ {
					dp := m.Sum().DataPoints().At(d)
					svc, _ := dp.Attributes().Get(series.ServiceNameKey)
					name, _ := dp.Attributes().Get(series.SpanNameKey)
					out[svc.Str()+"|"+name.Str()] += dp.IntValue()
				}
			}
		}
	}
	return out
}

// tracesOf returns one resource per case (service.name = the case's service) holding its span.
func tracesOf(t *testing.T, cases []spanNameCase) ptrace.Traces {
	td := ptrace.NewTraces()
	for _, c := range cases {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr(series.ServiceNameKey, c.service)
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetName(c.name)
		sp.SetKind(c.kind)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(testStart))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(testStart) + 1e6)
		require.NoError(t, sp.Attributes().FromRaw(c.attrs))
	}
	return td
}

var semconvCases = []spanNameCase{
	{desc: "http server, stable attributes", kind: ptrace.SpanKindServer, name: "GET /orders/123",
		attrs: map[string]any{"http.request.method": "GET", "http.route": "/orders/{id}", "url.path": "/orders/123"},
		want:  "GET /orders/{id}"},
	{desc: "http server, old semconv", kind: ptrace.SpanKindServer, name: "/users/42",
		attrs: map[string]any{"http.method": "POST", "http.route": "/users/:id", "http.target": "/users/42"},
		want:  "POST /users/:id"},
	{desc: "http server, _OTHER method", kind: ptrace.SpanKindServer, name: "PURGE /cache/7",
		attrs: map[string]any{"http.request.method": "_OTHER", "http.request.method_original": "PURGE", "http.route": "/cache/{key}"},
		want:  "HTTP /cache/{key}"},
	{desc: "http server, route kept verbatim", kind: ptrace.SpanKindServer, name: "GET /a/1",
		attrs: map[string]any{"http.request.method": "GET", "http.route": "/a/{id}/"},
		want:  "GET /a/{id}/"},
	{desc: "http server without route", kind: ptrace.SpanKindServer, name: "GET /orders/123",
		attrs: map[string]any{"http.request.method": "GET", "url.path": "/orders/123"},
		want:  "GET /orders/123"},
	{desc: "http server, route without method", kind: ptrace.SpanKindServer, name: "/orders/123",
		attrs: map[string]any{"http.route": "/orders/{id}"},
		want:  "/orders/123"},
	{desc: "http server, route not a string", kind: ptrace.SpanKindServer, name: "GET /n/1",
		attrs: map[string]any{"http.request.method": "GET", "http.route": int64(7)},
		want:  "GET /n/1"},
	{desc: "http client with url.template", kind: ptrace.SpanKindClient, name: "GET https://api/items/9",
		attrs: map[string]any{"http.request.method": "GET", "url.template": "/items/{id}", "url.full": "https://api/items/9"},
		want:  "GET /items/{id}"},
	{desc: "http client with a route only", kind: ptrace.SpanKindClient, name: "GET /items/9",
		attrs: map[string]any{"http.request.method": "GET", "http.route": "/items/{id}"},
		want:  "GET /items/9"},
	{desc: "http server with a url.template only", kind: ptrace.SpanKindServer, name: "GET /items/9",
		attrs: map[string]any{"http.request.method": "GET", "url.template": "/items/{id}"},
		want:  "GET /items/9"},
	{desc: "rpc", kind: ptrace.SpanKindClient, name: "grpc call 1234",
		attrs: map[string]any{"rpc.system": "grpc", "rpc.service": "shop.Cart", "rpc.method": "AddItem"},
		want:  "shop.Cart/AddItem"},
	{desc: "rpc without method", kind: ptrace.SpanKindClient, name: "grpc call 1234",
		attrs: map[string]any{"rpc.system": "grpc", "rpc.service": "shop.Cart"},
		want:  "grpc call 1234"},
	{desc: "db query summary", kind: ptrace.SpanKindClient, name: "SELECT * FROM orders WHERE id = 5",
		attrs: map[string]any{"db.system.name": "postgresql", "db.query.summary": "SELECT orders", "db.operation.name": "SELECT", "db.collection.name": "orders_v2"},
		want:  "SELECT orders"},
	{desc: "db operation and collection", kind: ptrace.SpanKindClient, name: "SELECT * FROM items WHERE id = 5",
		attrs: map[string]any{"db.system.name": "postgresql", "db.operation.name": "SELECT", "db.collection.name": "items"},
		want:  "SELECT items"},
	{desc: "db stored procedure", kind: ptrace.SpanKindClient, name: "EXEC charge 5",
		attrs: map[string]any{"db.operation.name": "EXEC", "db.stored_procedure.name": "charge"},
		want:  "EXEC charge"},
	{desc: "db operation alone", kind: ptrace.SpanKindClient, name: "BEGIN 77",
		attrs: map[string]any{"db.system.name": "mysql", "db.operation.name": "BEGIN"},
		want:  "BEGIN 77"},
	{desc: "messaging with template", kind: ptrace.SpanKindProducer, name: "publish orders.eu.981",
		attrs: map[string]any{"messaging.operation.name": "publish", "messaging.destination.template": "orders.{region}.{id}", "messaging.destination.name": "orders.eu.981"},
		want:  "publish orders.{region}.{id}"},
	{desc: "messaging with destination name", kind: ptrace.SpanKindConsumer, name: "process msg-9",
		attrs: map[string]any{"messaging.operation.name": "process", "messaging.destination.name": "orders"},
		want:  "process orders"},
	{desc: "messaging, temporary destination", kind: ptrace.SpanKindConsumer, name: "process amq.gen-12",
		attrs: map[string]any{"messaging.operation.name": "process", "messaging.destination.name": "amq.gen-12", "messaging.destination.temporary": true},
		want:  "process amq.gen-12"},
	{desc: "no attributes", kind: ptrace.SpanKindInternal, name: "compute 5", want: "compute 5"},
}

func TestSpanNamesFromSemanticConventions(t *testing.T) {
	cases := make([]spanNameCase, len(semconvCases))
	copy(cases, semconvCases)
	for i := range cases {
		cases[i].service = fmt.Sprintf("case-%d", i) // one series per case, told apart by service
	}
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("from_semantic_conventions=%v", on), func(t *testing.T) {
			r := startConnector(t, NewFactory(), map[string]any{"span_name": map[string]any{"from_semantic_conventions": on}})
			r.consume(tracesOf(t, cases))
			got := callsByName(t, r)
			require.Len(t, got, len(cases))
			renamed := 0
			for _, c := range cases {
				want := c.name
				if on {
					want = c.want
				}
				if want != c.name {
					renamed++
				}
				require.Equal(t, int64(1), got[c.service+"|"+want], "%s: want span.name %q, got %v", c.desc, want, got)
			}
			names := r.conn.(*connectorImp).names
			if !on {
				require.Nil(t, names, "nothing renames spans by default")
				return
			}
			require.Equal(t, int64(renamed), names.Renamed(reduce.RenamedBySemconv))
			require.Zero(t, names.Renamed(reduce.RenamedByRule))
		})
	}
}

func rulesConfig(semconv bool, rules ...map[string]any) map[string]any {
	rs := make([]any, len(rules))
	for i, r := range rules {
		rs[i] = r
	}
	return map[string]any{"span_name": map[string]any{"from_semantic_conventions": semconv, "rules": rs}}
}

func TestSpanNameRules(t *testing.T) {
	raw := rulesConfig(true,
		map[string]any{"service": "checkout", "match": `^GET /cart/\d+$`, "replace": "GET /cart/{id}"},
		map[string]any{"match": `^(GET|POST) /orders/(\d+)(/items)?`, "replace": "$1 /orders/{id}$3"},
		map[string]any{"match": `^(GET|POST) /orders/`, "replace": "never: the rule above matches first"},
		map[string]any{"service": "billing", "match": `^invoice-(?P<year>\d{4})-\d+$`, "replace": "invoice ${year}"},
		map[string]any{"match": `^GET /users/\{id\}$`, "replace": "GET /users/:id"},
	)
	cases := []spanNameCase{
		{service: "checkout", name: "GET /cart/12", want: "GET /cart/{id}"},
		{service: "shop", name: "GET /cart/12", want: "GET /cart/12"}, // rule 0 is for checkout only
		{service: "shop", name: "GET /orders/5", want: "GET /orders/{id}"},
		{service: "shop", name: "POST /orders/77/items", want: "POST /orders/{id}/items"},
		{service: "checkout", name: "GET /orders/8", want: "GET /orders/{id}"},
		{service: "billing", name: "invoice-2025-00017", want: "invoice 2025"},
		{service: "shop", name: "invoice-2025-00017", want: "invoice-2025-00017"},
		{service: "shop", name: "healthz", want: "healthz"},
		// Rules see the name the semantic conventions gave.
		{service: "users", kind: ptrace.SpanKindServer, name: "GET /users/9",
			attrs: map[string]any{"http.request.method": "GET", "http.route": "/users/{id}"}, want: "GET /users/:id"},
	}
	r := startConnector(t, NewFactory(), raw)
	want := map[string]int64{}
	renamed := 0
	// Twice: the second pass answers from the rule cache and must agree with the first.
	for range 2 {
		r.consume(tracesOf(t, cases))
		for _, c := range cases {
			want[c.service+"|"+c.want]++
			if c.want != c.name {
				renamed++
			}
		}
	}
	require.Equal(t, want, callsByName(t, r))
	names := r.conn.(*connectorImp).names
	require.Equal(t, int64(renamed), names.Renamed(reduce.RenamedByRule))
	require.Equal(t, int64(2), names.Renamed(reduce.RenamedBySemconv))
}

// A raw path in the span name makes a series per request; one rule makes it one series with
// every call.
func TestSpanNameRuleCollapsesSeries(t *testing.T) {
	orders := func() ptrace.Traces {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr(series.ServiceNameKey, "shop")
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		for i := range 1000 {
			sp := spans.AppendEmpty()
			sp.SetName(fmt.Sprintf("GET /orders/%d", i))
			sp.SetKind(ptrace.SpanKindServer)
		}
		return td
	}
	for _, tc := range []struct {
		raw  map[string]any
		want map[string]int64
	}{
		{rulesConfig(false, map[string]any{"match": `^GET /orders/\d+$`, "replace": "GET /orders/{id}"}),
			map[string]int64{"shop|GET /orders/{id}": 1000}},
		{map[string]any{}, nil},
	} {
		r := startConnector(t, NewFactory(), tc.raw)
		r.consume(orders())
		got := callsByName(t, r)
		if tc.want == nil {
			require.Len(t, got, 1000, "without the rule, a series per path")
			continue
		}
		require.Equal(t, tc.want, got)
	}
}

// Producers share the rule cache; concurrent misses and hits must all give the rules' answer.
func TestSpanNameRulesConcurrentProducers(t *testing.T) {
	r := startConnector(t, NewFactory(), rulesConfig(false, map[string]any{"match": `^GET /orders/(\d)\d*$`, "replace": "GET /orders/$1*"}))
	const producers, calls = 4, 20
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range calls {
				td := ptrace.NewTraces()
				rs := td.ResourceSpans().AppendEmpty()
				rs.Resource().Attributes().PutStr(series.ServiceNameKey, "shop")
				spans := rs.ScopeSpans().AppendEmpty().Spans()
				for i := range 100 {
					spans.AppendEmpty().SetName(fmt.Sprintf("GET /orders/%d", 1+(p*calls*100+c*100+i)%5000))
				}
				r.consume(td)
			}
		}()
	}
	wg.Wait()
	// Every call returned before the flush's tick, so the flush holds them all, also when
	// the tick finds the aggregator inside a drain round.
	got := callsByName(t, r)
	want := map[string]int64{}
	for p := range producers {
		for c := range calls {
			for i := range 100 {
				n := 1 + (p*calls*100+c*100+i)%5000
				want[fmt.Sprintf("shop|GET /orders/%s*", fmt.Sprint(n)[:1])]++
			}
		}
	}
	require.Equal(t, want, got)
}

// With span.name excluded there is nothing to rename, and nothing is counted as renamed.
func TestSpanNameWithSpanNameExcluded(t *testing.T) {
	raw := rulesConfig(true, map[string]any{"match": `.`, "replace": "x"})
	raw["exclude_dimensions"] = []any{"span.name"}
	r := startConnector(t, NewFactory(), raw)
	require.Nil(t, r.conn.(*connectorImp).names)
	r.consume(tracesOf(t, []spanNameCase{{service: "s", name: "a"}, {service: "s", name: "b"}}))
	require.Equal(t, map[string]int64{"s|": 2}, callsByName(t, r))
}

func TestSpanNameRulesValidate(t *testing.T) {
	for _, tc := range []struct {
		rules   []any
		wantErr string
	}{
		{[]any{map[string]any{"match": "a"}, map[string]any{"match": "b"}, map[string]any{"match": "(unclosed", "replace": "x"}},
			"span_name.rules[2].match: error parsing regexp: missing closing ): `(unclosed`"},
		{[]any{map[string]any{"match": "", "replace": "x"}}, "span_name.rules[0].match: empty"},
		{[]any{map[string]any{"match": `^/(\w+)$`, "replace": "$2"}}, "span_name.rules[0].replace: \"$2\": $2 refers to group 2, the expression has 1"},
		{[]any{map[string]any{"match": `^/(\w+)$`, "replace": "$1x"}}, "span_name.rules[0].replace: \"$1x\": $1x refers to no group"},
		{[]any{map[string]any{"match": `^/(\w+)$`, "replace": "${1"}}, "span_name.rules[0].replace: \"${1\": unterminated"},
		{[]any{map[string]any{"match": `^/(\w+)$`, "replace": "costs $"}}, "span_name.rules[0].replace: \"costs $\": a lone $"},
		{[]any{map[string]any{"match": `^/(?P<x>\w+)$`, "replace": "${x}-$1 $$ ${1}x"}}, ""},
	} {
		cfg := createDefaultConfig().(*Config)
		require.NoError(t, confmap.NewFromStringMap(map[string]any{"span_name": map[string]any{"rules": tc.rules}}).Unmarshal(cfg))
		err := cfg.Validate()
		if tc.wantErr == "" {
			require.NoError(t, err)
			continue
		}
		require.ErrorContains(t, err, tc.wantErr)
	}
}

// Names longer than the cache takes are renamed by the rules every time, and equally.
func TestSpanNameRulesLongNames(t *testing.T) {
	r := startConnector(t, NewFactory(), rulesConfig(false, map[string]any{"match": `^q (\w)\w*$`, "replace": "q $1"}))
	long := "q " + fmt.Sprintf("%0300d", 7)
	for range 3 {
		r.consume(tracesOf(t, []spanNameCase{{service: "s", name: long}, {service: "s", name: "q abc"}}))
	}
	require.Equal(t, map[string]int64{"s|q 0": 3, "s|q a": 3}, callsByName(t, r))
}

func TestLoadSpanNameConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "span_name.yaml"))
	require.NoError(t, err)
	load := func(id string) (*Config, error) {
		cfg := createDefaultConfig().(*Config)
		sub, err := cm.Sub(component.NewIDWithName(metadata.Type, id).String())
		require.NoError(t, err)
		if err := sub.Unmarshal(cfg); err != nil {
			return nil, err
		}
		return cfg, confmap.Validate(cfg)
	}
	cfg, err := load("span_names")
	require.NoError(t, err)
	want := createDefaultConfig().(*Config)
	want.SpanName = SpanNameConfig{FromSemanticConventions: true, Rules: []SpanNameRule{
		{Service: "checkout", Match: `^GET /cart/\d+$`, Replace: "GET /cart/{id}"},
		{Match: `^(GET|POST) /orders/\d+(/items)?$`, Replace: "$1 /orders/{id}$2"},
	}, Clustering: defaultClusteringConfig()}
	require.Equal(t, want, cfg)
	_, err = load("invalid_span_name_rule")
	require.ErrorContains(t, err, "span_name.rules[1].match: error parsing regexp: missing closing ): `^GET /(\\d+$`")
}

// renamed_spans is exported by layer, one series per configured layer from 0, and no other
// attribute (no service.name: that would be a cardinality of its own).
func TestTelemetryCountsRenamedSpans(t *testing.T) {
	layers := func(tel *componenttest.Telemetry) map[string]int64 {
		m, err := tel.GetMetric("otelcol_connector_tracemetrics_renamed_spans")
		if err != nil {
			return nil
		}
		sum := m.Data.(metricdata.Sum[int64])
		require.True(t, sum.IsMonotonic)
		out := map[string]int64{}
		for _, dp := range sum.DataPoints {
			require.Equal(t, 1, dp.Attributes.Len())
			layer, ok := dp.Attributes.Value("layer")
			require.True(t, ok)
			out[layer.AsString()] = dp.Value
		}
		return out
	}
	c, _, _, tel := startOurs(t, rulesConfig(false, map[string]any{"match": `^GET /orders/\d+$`, "replace": "GET /orders/{id}"}), true)
	require.Equal(t, map[string]int64{"rule": 0}, layers(tel), "the configured layer only, from 0")

	c, _, _, tel = startOurs(t, rulesConfig(true, map[string]any{"match": `^GET /orders/\d+$`, "replace": "GET /orders/{id}"}), true)
	cases := []spanNameCase{
		{service: "a", kind: ptrace.SpanKindServer, name: "GET /orders/1", attrs: map[string]any{"http.request.method": "GET", "http.route": "/orders/{id}"}},
		{service: "a", name: "GET /orders/2"},
		{service: "b", name: "GET /orders/3"},
		{service: "b", name: "healthz"},
	}
	require.NoError(t, c.ConsumeTraces(context.Background(), tracesOf(t, cases)))
	require.Equal(t, map[string]int64{"semantic_conventions": 1, "rule": 2}, layers(tel))
}

// With more names than the rule cache holds, full sets admit few new entries and evict others:
// every span must still get the rules' answer, and names that repeat must keep getting it.
func TestSpanNameRulesBeyondTheCache(t *testing.T) {
	r := startConnector(t, NewFactory(), rulesConfig(false,
		map[string]any{"match": `^item-(\d)\d*7$`, "replace": "item $1…7"},
		map[string]any{"match": `^item-(\d)`, "replace": "item $1…"}))
	want := map[string]int64{}
	const distinct = 3 * 8192 // three times the rule cache's slots (internal/reduce)
	for range 2 {
		for c := range distinct / 1000 {
			td := ptrace.NewTraces()
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr(series.ServiceNameKey, "s")
			spans := rs.ScopeSpans().AppendEmpty().Spans()
			for i := range 1000 {
				n := 10 + c*1000 + i
				if i%2 == 0 {
					n = 10 + i%40 // a few hot names among the cold ones
				}
				name := fmt.Sprintf("item-%d", n)
				spans.AppendEmpty().SetName(name)
				out := "item " + name[5:6] + "…"
				if name[len(name)-1] == '7' {
					out += "7"
				}
				want["s|"+out]++
			}
			r.consume(td)
		}
	}
	require.Equal(t, want, callsByName(t, r))
}
