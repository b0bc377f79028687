package tracegraph

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/spanfilter"
)

// forBothPaths feeds tds to a connector configured by mod, as pdata and as wire traces, and
// checks what each flushed last.
func forBothPaths(t *testing.T, mod func(*Config), tds []ptrace.Traces, check func(t *testing.T, c *connectorImp, totals map[string]int64)) {
	for _, wire := range []bool{false, true} {
		c, sink := startTracegraph(t, mod)
		for _, td := range tds {
			if wire {
				td = wireEncodings[0](t, td)
			}
			consume(t, c, td)
		}
		require.NoError(t, c.Shutdown(context.Background()))
		check(t, c, requestTotals(lastFlush(t, sink)))
	}
}

// filter_policies drop spans before they make half edges, and count them.
func TestFilterPolicies(t *testing.T) {
	mod := func(cfg *Config) {
		cfg.FilterPolicies = []spanfilter.Policy{{Exclude: &spanfilter.Match{MatchType: spanfilter.Strict, Attributes: []spanfilter.Attribute{
			{Key: "resource.service.name", Value: "batch"},
		}}}, {Exclude: &spanfilter.Match{MatchType: spanfilter.Regex, Attributes: []spanfilter.Attribute{
			{Key: "span.http.route", Value: "^/health"},
		}}}}
	}
	health := func(s ptrace.Span) { s.Attributes().PutStr("http.route", "/healthz") }
	tds := []ptrace.Traces{
		oneSpan("web", ptrace.SpanKindClient, 1, 1, 0, nil),
		oneSpan("api", ptrace.SpanKindServer, 1, 2, 1, nil),
		oneSpan("batch", ptrace.SpanKindClient, 2, 1, 0, nil), // dropped: the server span waits alone
		oneSpan("api", ptrace.SpanKindServer, 2, 2, 1, nil),
		oneSpan("lb", ptrace.SpanKindClient, 3, 1, 0, health), // both halves dropped
		oneSpan("api", ptrace.SpanKindServer, 3, 2, 1, health),
	}
	forBothPaths(t, mod, tds, func(t *testing.T, c *connectorImp, totals map[string]int64) {
		assert.Equal(t, map[string]int64{"{client=web,connection_type=,failed=false,server=api}": 1}, totals)
		assert.EqualValues(t, 3, c.tel.filteredSpans.Load())
		assert.EqualValues(t, 6, c.tel.receivedSpans.Load(), "filtered spans are received spans too")
	})
}

// sampling.attribute, by Tempo's name span_multiplier_key too, weighs a span by 1/p, read on
// the span, then on its resource; an edge counts the larger of its two halves' weights.
func TestSpanMultiplierKey(t *testing.T) {
	for _, mod := range []func(*Config){
		func(cfg *Config) { cfg.SpanMultiplierKey = "sample.ratio" },
		func(cfg *Config) { cfg.Sampling.Attribute = "sample.ratio" },
	} {
		tds := []ptrace.Traces{
			oneSpan("web", ptrace.SpanKindClient, 1, 1, 0, func(s ptrace.Span) { s.Attributes().PutDouble("sample.ratio", 0.5) }),
			oneSpan("api", ptrace.SpanKindServer, 1, 2, 1, nil), // the resource's 0.25: 4
			oneSpan("web", ptrace.SpanKindClient, 2, 1, 0, func(s ptrace.Span) { s.Attributes().PutStr("sample.ratio", "0.2") }),
			oneSpan("api", ptrace.SpanKindServer, 2, 2, 1, func(s ptrace.Span) { s.Attributes().PutInt("sample.ratio", 1) }),
			oneSpan("web", ptrace.SpanKindClient, 3, 1, 0, func(s ptrace.Span) { s.Attributes().PutDouble("sample.ratio", 2) }), // invalid: 1
			oneSpan("api", ptrace.SpanKindServer, 3, 2, 1, func(s ptrace.Span) { s.Attributes().PutInt("sample.ratio", 1) }),
		}
		tds[1].ResourceSpans().At(0).Resource().Attributes().PutDouble("sample.ratio", 0.25)
		forBothPaths(t, mod, tds, func(t *testing.T, c *connectorImp, totals map[string]int64) {
			assert.Equal(t, map[string]int64{"{client=web,connection_type=,failed=false,server=api}": 4 + 5 + 1}, totals)
			assert.EqualValues(t, 1, c.tel.invalidWeights.Load())
		})
	}
}

func TestTempoKeysValidation(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) {
			c.FilterPolicies = []spanfilter.Policy{{Include: &spanfilter.Match{MatchType: "exact"}}}
		}, `filter_policies[0].include.match_type: "exact", use "strict" or "regex"`},
		{func(c *Config) {
			c.FilterPolicies = []spanfilter.Policy{{}, {Exclude: &spanfilter.Match{MatchType: "regex", Attributes: []spanfilter.Attribute{{Key: "db.system", Value: "redis"}}}}}
		}, `filter_policies[1].exclude.attributes[0].key: "db.system": use resource.<attribute>, span.<attribute>`},
		{func(c *Config) { c.SpanMultiplierKey, c.Sampling.Attribute = "a", "b" },
			`span_multiplier_key: "a", but sampling.attribute is "b"`},
		{func(c *Config) { c.SpanMultiplierKey, c.Sampling.Weighted = "a", false },
			`span_multiplier_key: set, but sampling.weighted is false`},
		{func(c *Config) { c.Sampling.Attribute, c.Sampling.Weighted = "a", false },
			`sampling.attribute: set, but sampling.weighted is false`},
	} {
		cfg := createDefaultConfig().(*Config)
		tc.mod(cfg)
		err := cfg.Validate()
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
}
