package spanfilter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/goleak"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// spans returns one resource (service.name=api, env=prod) with spans named after what they
// carry, and their names in order.
func spans() ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "api")
	rs.Resource().Attributes().PutStr("env", "prod")
	ss := rs.ScopeSpans().AppendEmpty().Spans()
	add := func(name string, kind ptrace.SpanKind, code ptrace.StatusCode, attrs map[string]any) {
		sp := ss.AppendEmpty()
		sp.SetName(name)
		sp.SetKind(kind)
		sp.Status().SetCode(code)
		require.NoError(nil, sp.Attributes().FromRaw(attrs))
	}
	add("GET /users", ptrace.SpanKindServer, ptrace.StatusCodeOk, map[string]any{"http.method": "GET", "http.status_code": 200})
	add("SELECT", ptrace.SpanKindClient, ptrace.StatusCodeUnset, map[string]any{"db.system": "redis", "sampled": true})
	add("internal", ptrace.SpanKindInternal, ptrace.StatusCodeError, map[string]any{"ratio": 0.5, "bytes": []any{1}})
	add("odd-kind", ptrace.SpanKind(42), ptrace.StatusCode(7), nil)
	return td
}

// kept returns the names of the spans of td that policies keep, read from pdata and from the
// wire; the two must agree.
func kept(t *testing.T, policies []Policy) []string {
	t.Helper()
	f, err := Compile("filter_policies", policies)
	require.NoError(t, err)
	td := spans()
	fromPdata := keptFrom(f, traceview.FromPdata(td))
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	var d otlpwire.Decoder
	require.NoError(t, d.Decode(b))
	require.Equal(t, fromPdata, keptFrom(f, traceview.FromWire(&d)), "pdata and wire differ")
	return fromPdata
}

func keptFrom[S traceview.Source](f *Filter, req traceview.Request[S]) []string {
	var out []string
	var rs traceview.Resource[S]
	var sc traceview.Scope[S]
	var sp traceview.Span[S]
	for i := range req.NumResources() {
		req.ReadResource(i, &rs)
		for j := range rs.NumScopes() {
			rs.ReadScope(j, &sc)
			for k := range sc.NumSpans() {
				sc.ReadSpan(k, &sp)
				if f == nil || Keep(f, rs.Attributes(), &sp) {
					out = append(out, sp.Name())
				}
			}
		}
	}
	return out
}

func attr(key string, v any) Attribute { return Attribute{Key: key, Value: v} }

func TestKeepAsTempo(t *testing.T) {
	all := []string{"GET /users", "SELECT", "internal", "odd-kind"}
	for _, tc := range []struct {
		name     string
		policies []Policy
		want     []string
	}{
		{"no policies", nil, all},
		{"include kind strict", []Policy{{Include: &Match{MatchType: Strict, Attributes: []Attribute{attr("kind", "SPAN_KIND_SERVER")}}}}, []string{"GET /users"}},
		{"include span:kind regex", []Policy{{Include: &Match{MatchType: Regex, Attributes: []Attribute{attr("span:kind", "SPAN_KIND_(SERVER|CLIENT)")}}}}, []string{"GET /users", "SELECT"}},
		{"regex on a kind outside the enum sees its number", []Policy{{Include: &Match{MatchType: Regex, Attributes: []Attribute{attr("kind", "^42$")}}}}, []string{"odd-kind"}},
		{"exclude status strict", []Policy{{Exclude: &Match{MatchType: Strict, Attributes: []Attribute{attr("status", "STATUS_CODE_ERROR")}}}}, []string{"GET /users", "SELECT", "odd-kind"}},
		{"status regex", []Policy{{Include: &Match{MatchType: Regex, Attributes: []Attribute{attr("status", "OK|UNSET")}}}}, []string{"GET /users", "SELECT"}},
		{"name strict", []Policy{{Include: &Match{MatchType: Strict, Attributes: []Attribute{attr("name", "SELECT")}}}}, []string{"SELECT"}},
		{"name regex unanchored", []Policy{{Exclude: &Match{MatchType: Regex, Attributes: []Attribute{attr("span:name", "user")}}}}, []string{"SELECT", "internal", "odd-kind"}},
		{"span attribute string", []Policy{{Include: &Match{MatchType: Strict, Attributes: []Attribute{attr("span.db.system", "redis")}}}}, []string{"SELECT"}},
		{"span attribute int", []Policy{{Include: &Match{MatchType: Strict, Attributes: []Attribute{attr("span.http.status_code", 200)}}}}, []string{"GET /users"}},
		{"span attribute double and bool", []Policy{
			{IncludeAny: &Match{MatchType: Strict, Attributes: []Attribute{attr("span.ratio", 0.5)}}},
			{IncludeAny: &Match{MatchType: Strict, Attributes: []Attribute{attr("span.sampled", true)}}},
		}, []string{"SELECT", "internal"}},
		{"type mismatch compares the zero value", []Policy{{Include: &Match{MatchType: Strict, Attributes: []Attribute{attr("span.http.status_code", "")}}}}, []string{"GET /users"}},
		{"regex on a non-string sees empty", []Policy{{Include: &Match{MatchType: Regex, Attributes: []Attribute{attr("span.bytes", "^$")}}}}, []string{"internal"}},
		{"quoted attribute name", []Policy{{Include: &Match{MatchType: Strict, Attributes: []Attribute{attr(`span."db.system"`, "redis")}}}}, []string{"SELECT"}},
		{"resource attribute", []Policy{{Include: &Match{MatchType: Strict, Attributes: []Attribute{attr("resource.env", "prod")}}}}, all},
		{"resource attribute mismatch", []Policy{{Include: &Match{MatchType: Regex, Attributes: []Attribute{attr("resource.env", "^staging$")}}}}, nil},
		{"all conditions of a match hold", []Policy{{Include: &Match{MatchType: Strict, Attributes: []Attribute{
			attr("kind", "SPAN_KIND_CLIENT"), attr("resource.service.name", "api"), attr("span.db.system", "redis"),
		}}}}, []string{"SELECT"}},
		{"every include of every policy", []Policy{
			{Include: &Match{MatchType: Regex, Attributes: []Attribute{attr("kind", "SERVER|CLIENT")}}},
			{Include: &Match{MatchType: Strict, Attributes: []Attribute{attr("status", "STATUS_CODE_OK")}}},
		}, []string{"GET /users"}},
		{"include_any wins over include", []Policy{
			{Include: &Match{MatchType: Strict, Attributes: []Attribute{attr("kind", "SPAN_KIND_SERVER")}}},
			{IncludeAny: &Match{MatchType: Strict, Attributes: []Attribute{attr("name", "internal")}}},
		}, []string{"GET /users", "internal"}},
		{"exclude wins over include_any", []Policy{{
			IncludeAny: &Match{MatchType: Regex, Attributes: []Attribute{attr("name", ".")}},
			Exclude:    &Match{MatchType: Strict, Attributes: []Attribute{attr("name", "SELECT")}},
		}}, []string{"GET /users", "internal", "odd-kind"}},
		{"a match without conditions matches everything", []Policy{{Exclude: &Match{MatchType: Strict}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, kept(t, tc.policies))
		})
	}
}

func TestCompileErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		policy Policy
		want   string
	}{
		{Policy{}, "filter_policies[0]: a policy needs at least one of include, include_any and exclude"},
		{Policy{Include: &Match{MatchType: "exact"}}, `filter_policies[0].include.match_type: "exact", use "strict" or "regex"`},
		{Policy{Exclude: &Match{MatchType: Strict, Attributes: []Attribute{attr(".foo", "x")}}}, `filter_policies[0].exclude.attributes[0].key: ".foo": use resource.<attribute>`},
		{Policy{Exclude: &Match{MatchType: Strict, Attributes: []Attribute{attr("", "x")}}}, `filter_policies[0].exclude.attributes[0].key: empty`},
		{Policy{Exclude: &Match{MatchType: Strict, Attributes: []Attribute{attr("span.", "x")}}}, `"span." names no attribute`},
		{Policy{IncludeAny: &Match{MatchType: Regex, Attributes: []Attribute{attr("name", "(")}}}, "filter_policies[0].include_any.attributes[0].value: invalid regular expression"},
		{Policy{IncludeAny: &Match{MatchType: Regex, Attributes: []Attribute{attr("span.x", 3)}}}, "filter_policies[0].include_any.attributes[0].value: 3 (int): a regex is a string"},
		{Policy{Include: &Match{MatchType: Strict, Attributes: []Attribute{attr("kind", "SERVER")}}}, `filter_policies[0].include.attributes[0].value: "SERVER" is not one of`},
		{Policy{Include: &Match{MatchType: Strict, Attributes: []Attribute{attr("status", 2)}}}, "a strict kind, status or name is a string"},
		{Policy{Include: &Match{MatchType: Strict, Attributes: []Attribute{attr("span.x", nil)}}}, "filter_policies[0].include.attributes[0].value: missing"},
		{Policy{Include: &Match{MatchType: Strict, Attributes: []Attribute{attr("span.x", []any{1})}}}, "a strict condition compares a string"},
	} {
		err := Validate("filter_policies", []Policy{tc.policy})
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
	require.NoError(t, Validate("filter_policies", nil))
}

// Keep allocates nothing, from either source, regexes included.
func TestKeepAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	f, err := Compile("filter_policies", []Policy{
		{Exclude: &Match{MatchType: Regex, Attributes: []Attribute{attr("name", "^health"), attr("span.http.method", "GET|HEAD")}}},
		{Include: &Match{MatchType: Strict, Attributes: []Attribute{attr("resource.env", "prod"), attr("kind", "SPAN_KIND_SERVER")}}},
		{IncludeAny: &Match{MatchType: Regex, Attributes: []Attribute{attr("kind", "CLIENT|42"), attr("status", ".")}}},
	})
	require.NoError(t, err)
	td := spans()
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	var d otlpwire.Decoder
	require.NoError(t, d.Decode(b))
	n := td.SpanCount()
	pc, wc := &cursors[traceview.Pdata]{}, &cursors[traceview.Wire]{}
	kept := countKept(f, traceview.FromPdata(td), pc) // warms the regexps' machines
	assert.Zero(t, testing.AllocsPerRun(100, func() { countKept(f, traceview.FromPdata(td), pc) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { countKept(f, traceview.FromWire(&d), wc) }))
	assert.Equal(t, kept, countKept(f, traceview.FromWire(&d), wc))
	assert.Less(t, kept, n)
	assert.Positive(t, kept)
}

// cursors are a walk's cursors, made once: the generic calls let them escape, so cursors on
// the stack would be allocated per request (the reducers keep theirs with their batch too).
type cursors[S traceview.Source] struct {
	rs traceview.Resource[S]
	sc traceview.Scope[S]
	sp traceview.Span[S]
}

func countKept[S traceview.Source](f *Filter, req traceview.Request[S], c *cursors[S]) int {
	n := 0
	for i := range req.NumResources() {
		req.ReadResource(i, &c.rs)
		for j := range c.rs.NumScopes() {
			c.rs.ReadScope(j, &c.sc)
			for k := range c.sc.NumSpans() {
				c.sc.ReadSpan(k, &c.sp)
				if Keep(f, c.rs.Attributes(), &c.sp) {
					n++
				}
			}
		}
	}
	return n
}
