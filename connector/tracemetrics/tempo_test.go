package tracemetrics

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// tempoSpan is a span of tempoTraces.
type tempoSpan struct {
	service, name string
	kind          ptrace.SpanKind
	code          ptrace.StatusCode
	message       string
	attrs         map[string]any
}

// tempoTraces returns one resource per service (with host.name and the resource attributes
// given), holding the spans of that service.
func tempoTraces(t testing.TB, res map[string]any, spans ...tempoSpan) ptrace.Traces {
	td := ptrace.NewTraces()
	bySvc := map[string]ptrace.SpanSlice{}
	for _, s := range spans {
		ss, ok := bySvc[s.service]
		if !ok {
			rs := td.ResourceSpans().AppendEmpty()
			require.NoError(t, rs.Resource().Attributes().FromRaw(res))
			rs.Resource().Attributes().PutStr("service.name", s.service)
			rs.Resource().Attributes().PutStr("host.name", "host-"+s.service)
			ss = rs.ScopeSpans().AppendEmpty().Spans()
			bySvc[s.service] = ss
		}
		sp := ss.AppendEmpty()
		sp.SetName(s.name)
		sp.SetKind(s.kind)
		sp.Status().SetCode(s.code)
		sp.Status().SetMessage(s.message)
		sp.SetStartTimestamp(pcommon.Timestamp(testStart.UnixNano()))
		sp.SetEndTimestamp(pcommon.Timestamp(testStart.UnixNano() + 5e6))
		require.NoError(t, sp.Attributes().FromRaw(s.attrs))
	}
	return td
}

// calls returns the calls metric of md: its data points' attributes (attrString) → value,
// summed over resources, and the resources' attributes.
func calls(t testing.TB, md pmetric.Metrics) (map[string]int64, []map[string]any) {
	out := map[string]int64{}
	var resources []map[string]any
	for _, rm := range md.ResourceMetrics().All() {
		resources = append(resources, rm.Resource().Attributes().AsRaw())
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Name() != DefaultNamespace+".calls" {
					continue
				}
				for _, dp := range m.Sum().DataPoints().All() {
					a := dp.Attributes()
					a.Remove("collector.instance.id")
					out[attrString(a)] += dp.IntValue()
				}
			}
		}
	}
	require.NotNil(t, out)
	return out, resources
}

// forBothPaths runs check on the metrics of td consumed as pdata and as wire traces.
func forBothPaths(t *testing.T, raw map[string]any, td ptrace.Traces, check func(t *testing.T, c *connectorImp, md pmetric.Metrics)) {
	for _, path := range []string{"pdata", "wire"} {
		t.Run(path, func(t *testing.T) {
			r := startConnector(t, NewFactory(), raw)
			in := td
			if path == "wire" {
				in = wireEncodings[0].enc(t, td)
			}
			r.consume(in)
			c := r.conn.(*connectorImp)
			check(t, c, settledFlush(t, r))
		})
	}
}

func str(k, v string) string { return fmt.Sprintf("%s=Str:%q", k, v) }

func TestFilterPolicies(t *testing.T) {
	raw := map[string]any{
		"exclude_dimensions": []any{"span.kind", "status.code"},
		"filter_policies": []any{
			// Tempo's service-graph default, here on span metrics: only the edges' kinds.
			map[string]any{"include": map[string]any{"match_type": "regex", "attributes": []any{
				map[string]any{"key": "kind", "value": "SPAN_KIND_(SERVER|CONSUMER|CLIENT|PRODUCER)"},
			}}},
			map[string]any{"exclude": map[string]any{"match_type": "strict", "attributes": []any{
				map[string]any{"key": "span.http.route", "value": "/health"},
				map[string]any{"key": "resource.env", "value": "prod"},
			}}},
		},
	}
	td := tempoTraces(t, map[string]any{"env": "prod"},
		tempoSpan{service: "api", name: "GET /users", kind: ptrace.SpanKindServer, attrs: map[string]any{"http.route": "/users"}},
		tempoSpan{service: "api", name: "GET /health", kind: ptrace.SpanKindServer, attrs: map[string]any{"http.route": "/health"}},
		tempoSpan{service: "api", name: "render", kind: ptrace.SpanKindInternal},
		tempoSpan{service: "api", name: "SELECT", kind: ptrace.SpanKindClient},
	)
	forBothPaths(t, raw, td, func(t *testing.T, c *connectorImp, md pmetric.Metrics) {
		got, _ := calls(t, md)
		assert.Equal(t, map[string]int64{
			str("service.name", "api") + "," + str("span.name", "GET /users"): 1,
			str("service.name", "api") + "," + str("span.name", "SELECT"):     1,
		}, got)
		// Never silently lost: the two dropped spans are counted, the others aggregated.
		assert.EqualValues(t, 2, c.tel.FilteredSpans.Load())
		assert.EqualValues(t, 2, c.tel.AggregatedSpans.Load())
	})
}

func TestDimensionMappings(t *testing.T) {
	raw := map[string]any{
		"exclude_dimensions": []any{"span.kind", "status.code", "span.name"},
		"dimension_mappings": []any{
			map[string]any{"name": "endpoint", "source_labels": []any{"http.method", "http.route", "http.status_code"}, "join": " "},
			map[string]any{"name": "where", "source_labels": []any{"cloud.region", "k8s.namespace.name"}, "join": "/"},
		},
	}
	td := tempoTraces(t, map[string]any{"k8s.namespace.name": "shop"},
		// span attributes of every type, rendered as pcommon.Value.AsString does
		tempoSpan{service: "api", attrs: map[string]any{"http.method": "GET", "http.route": "/users", "http.status_code": 200, "cloud.region": "eu"}},
		// a missing and an empty source are skipped with their separator
		tempoSpan{service: "api", attrs: map[string]any{"http.method": "", "http.route": "/users"}},
		// the resource's value when the span has none
		tempoSpan{service: "web", attrs: map[string]any{}},
	)
	forBothPaths(t, raw, td, func(t *testing.T, _ *connectorImp, md pmetric.Metrics) {
		got, _ := calls(t, md)
		assert.Equal(t, map[string]int64{
			str("endpoint", "GET /users 200") + "," + str("service.name", "api") + "," + str("where", "eu/shop"): 1,
			str("endpoint", "/users") + "," + str("service.name", "api") + "," + str("where", "shop"):            1,
			str("service.name", "web") + "," + str("where", "shop"):                                              1,
		}, got)
	})
}

func TestIntrinsicDimensions(t *testing.T) {
	td := tempoTraces(t, nil,
		tempoSpan{service: "api", name: "a", kind: ptrace.SpanKindServer, code: ptrace.StatusCodeError, message: "connection refused"},
		tempoSpan{service: "api", name: "a", kind: ptrace.SpanKindServer, code: ptrace.StatusCodeError, message: "connection refused"},
		tempoSpan{service: "api", name: "a", kind: ptrace.SpanKindServer, code: ptrace.StatusCodeError, message: "timeout"},
		tempoSpan{service: "api", name: "b", kind: ptrace.SpanKindClient},
	)
	t.Run("status_message off by default", func(t *testing.T) {
		forBothPaths(t, map[string]any{"exclude_dimensions": []any{"span.kind"}}, td, func(t *testing.T, _ *connectorImp, md pmetric.Metrics) {
			got, _ := calls(t, md)
			assert.Equal(t, map[string]int64{
				str("service.name", "api") + "," + str("span.name", "a") + "," + str("status.code", "STATUS_CODE_ERROR"): 3,
				str("service.name", "api") + "," + str("span.name", "b") + "," + str("status.code", "STATUS_CODE_UNSET"): 1,
			}, got)
		})
	})
	t.Run("status_message on, span_kind and span_name off", func(t *testing.T) {
		raw := map[string]any{"intrinsic_dimensions": map[string]any{"status_message": true, "span_kind": false, "span_name": false, "service": true}}
		forBothPaths(t, raw, td, func(t *testing.T, _ *connectorImp, md pmetric.Metrics) {
			got, _ := calls(t, md)
			assert.Equal(t, map[string]int64{
				str("service.name", "api") + "," + str("status.code", "STATUS_CODE_ERROR") + "," + str("status.message", "connection refused"): 2,
				str("service.name", "api") + "," + str("status.code", "STATUS_CODE_ERROR") + "," + str("status.message", "timeout"):            1,
				// no message, no label
				str("service.name", "api") + "," + str("status.code", "STATUS_CODE_UNSET"): 1,
			}, got)
		})
	})
}

// span_multiplier_key is sampling.attribute by Tempo's name; like Tempo, it is read on the
// span, then on the resource.
func TestSpanMultiplierKey(t *testing.T) {
	raw := map[string]any{"span_multiplier_key": "sample.ratio", "exclude_dimensions": []any{"span.kind", "status.code", "span.name"}}
	td := tempoTraces(t, map[string]any{"sample.ratio": 0.5},
		tempoSpan{service: "api", attrs: map[string]any{"sample.ratio": 0.1}}, // 10
		tempoSpan{service: "api"}, // the resource's 0.5: 2
	)
	forBothPaths(t, raw, td, func(t *testing.T, _ *connectorImp, md pmetric.Metrics) {
		got, _ := calls(t, md)
		assert.Equal(t, map[string]int64{str("service.name", "api"): 12}, got)
	})
}

// target_info_excluded_dimensions leaves resource attributes out of the output resource (the
// target_info a Prometheus exporter renders) and out of the resource's identity: resources
// that differ only there are one.
func TestTargetInfoExcludedDimensions(t *testing.T) {
	raw := map[string]any{
		"enable_target_info":              true,
		"target_info_excluded_dimensions": []any{"host.name", "process.pid"},
		"exclude_dimensions":              []any{"span.kind", "status.code", "span.name"},
	}
	td := tempoTraces(t, map[string]any{"process.pid": 1, "env": "prod"}, tempoSpan{service: "api"})
	more := tempoTraces(t, map[string]any{"process.pid": 2, "env": "prod"}, tempoSpan{service: "api"}, tempoSpan{service: "api"})
	more.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	forBothPaths(t, raw, td, func(t *testing.T, _ *connectorImp, md pmetric.Metrics) {
		got, resources := calls(t, md)
		assert.Equal(t, map[string]int64{str("service.name", "api"): 3}, got)
		assert.Equal(t, []map[string]any{{"service.name": "api", "env": "prod"}}, resources)
	})
}

func TestTempoKeysValidation(t *testing.T) {
	for _, tc := range []struct {
		raw  map[string]any
		want string
	}{
		{map[string]any{"filter_policies": []any{map[string]any{"include": map[string]any{"match_type": "glob"}}}},
			`filter_policies[0].include.match_type: "glob", use "strict" or "regex"`},
		{map[string]any{"filter_policies": []any{map[string]any{"exclude": map[string]any{"match_type": "strict", "attributes": []any{
			map[string]any{"key": "kind", "value": "SERVER"}}}}}},
			`filter_policies[0].exclude.attributes[0].value: "SERVER" is not one of`},
		{map[string]any{"dimension_mappings": []any{map[string]any{"name": "span.name", "source_labels": []any{"a"}}}},
			`dimension_mappings[0].name: "span.name" is an attribute the connector writes itself`},
		{map[string]any{"dimensions": dims("route"), "dimension_mappings": []any{map[string]any{"name": "route", "source_labels": []any{"a"}}}},
			`dimension_mappings[0].name: "route" is also a dimension`},
		{map[string]any{"dimension_mappings": []any{map[string]any{"name": "x"}}},
			`dimension_mappings[0].source_labels: empty`},
		{map[string]any{"dimension_mappings": []any{map[string]any{"name": "x", "source_labels": []any{"a"}}, map[string]any{"name": "x", "source_labels": []any{"b", ""}}}},
			`dimension_mappings[1].name: "x" is mapped twice`},
		{map[string]any{"intrinsic_dimensions": map[string]any{"span_kind": true}, "exclude_dimensions": []any{"span.kind"}},
			`intrinsic_dimensions.span_kind: true, but exclude_dimensions lists span.kind`},
		{map[string]any{"intrinsic_dimensions": map[string]any{"status_message": true}, "dimensions": dims("status.message")},
			`dimensions: `},
		{map[string]any{"span_multiplier_key": "a", "sampling": map[string]any{"attribute": "b"}},
			`span_multiplier_key: "a", but sampling.attribute is "b"`},
		{map[string]any{"span_multiplier_key": "a", "sampling": map[string]any{"weighted": false}},
			`span_multiplier_key: set, but sampling.weighted is false`},
		{map[string]any{"target_info_excluded_dimensions": []any{"service.instance.id"}},
			`target_info_excluded_dimensions[0]: "service.instance.id" makes the job and instance labels`},
		{map[string]any{"target_info_excluded_dimensions": []any{"a", "a"}},
			`target_info_excluded_dimensions[1]: "a" is listed twice`},
	} {
		cfg := NewFactory().CreateDefaultConfig().(*Config)
		require.NoError(t, confmap.NewFromStringMap(tc.raw).Unmarshal(cfg))
		err := cfg.Validate()
		require.Error(t, err, "%v", tc.raw)
		assert.Contains(t, err.Error(), tc.want)
	}
	// The same key set both ways is one setting.
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(map[string]any{"span_multiplier_key": "a", "sampling": map[string]any{"attribute": "a"}}).Unmarshal(cfg))
	require.NoError(t, cfg.Validate())
}
