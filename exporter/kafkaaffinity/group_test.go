package kafkaaffinity

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestGroupingKeepsEverySpanOnce(t *testing.T) {
	cfg := testConfig()
	cfg.HotKeys.Keys = []StaticHotKey{{Key: "hot", Fanout: 4}}
	g := newGrouping(cfg, newHotKeys(cfg.HotKeys))

	td := ptrace.NewTraces()
	addResource(td, "a", 3, 3)
	addResource(td, "b", 2, 2)
	addResource(td, "a", 4, 2)     // a second resource of a: same record
	addResource(td, "", 5, 5)      // no service.name: fallback key
	addResource(td, "hot", 40, 10) // traces 0..9, 4 spans each: 3,3,2,2 traces per sub-key
	before := ptrace.NewTraces()
	td.CopyTo(before)
	g.add(td)

	assert.Equal(t, before, td, "the request is not modified")
	assert.Equal(t, 5, g.fallbackSpans)

	bySub := map[string][]int{}
	total := 0
	for _, grp := range g.groups {
		for i, sub := range grp.subs {
			if sub == (ptrace.Traces{}) {
				continue
			}
			assert.Equal(t, grp.spans[i], sub.SpanCount())
			total += sub.SpanCount()
			bySub[grp.key] = append(bySub[grp.key], sub.SpanCount())
		}
	}
	assert.Equal(t, td.SpanCount(), total)
	assert.Equal(t, map[string][]int{"a": {7}, "b": {2}, "_unkeyed": {5}, "hot": {12, 12, 8, 8}}, bySub)

	// Each trace of the hot key sits in exactly one sub-record, under a copy
	// of its resource and scope.
	hot := g.groups[g.index["hot"]]
	where := map[pcommon.TraceID]int{}
	for i, sub := range hot.subs {
		rs := sub.ResourceSpans().At(0)
		v, _ := rs.Resource().Attributes().Get("host.name")
		assert.Equal(t, "h1", v.Str())
		assert.Equal(t, "lib", rs.ScopeSpans().At(0).Scope().Name())
		spans := rs.ScopeSpans().At(0).Spans()
		for j := 0; j < spans.Len(); j++ {
			id := spans.At(j).TraceID()
			if prev, ok := where[id]; ok {
				assert.Equal(t, prev, i, "trace split over two sub-records")
			}
			where[id] = i
		}
	}
	assert.Len(t, where, 10)

	g.reset()
	assert.Empty(t, g.groups)
	assert.Empty(t, g.index)
}

func TestGroupingFansOutDetectedKey(t *testing.T) {
	cfg := testConfig()
	cfg.HotKeys.SpansPerSecond = 10
	cfg.HotKeys.Fanout = 3
	h := newHotKeys(cfg.HotKeys)
	g := newGrouping(cfg, h)

	td := ptrace.NewTraces()
	addResource(td, "busy", 30, 30)
	g.add(td)
	require.Len(t, g.groups, 1)
	assert.Len(t, g.groups[0].subs, 1, "not hot before the first interval closed")
	g.reset()

	h.tick(time.Second)
	g.add(td)
	require.Len(t, g.groups, 1)
	assert.Len(t, g.groups[0].subs, 3)
	assert.Equal(t, []int{10, 10, 10}, g.groups[0].spans)
}

// TestGroupingFollowsLinks: under key_by: trace_id a CONSUMER span with links
// goes to the sub-key of each trace it links to, with the links to that
// sub-key; other spans (a SERVER span with links too, a CONSUMER span whose
// only link has no span ID) and, with follow_links off, every span go to
// their own trace's sub-key, links untouched.
func TestGroupingFollowsLinks(t *testing.T) {
	span := func(ss ptrace.SpanSlice, kind ptrace.SpanKind, trace uint64, links ...uint64) {
		s := ss.AppendEmpty()
		s.SetKind(kind)
		s.SetTraceID(traceID(trace))
		for _, l := range links {
			sl := s.Links().AppendEmpty()
			sl.SetTraceID(traceID(l))
			if l != 0 {
				sl.SetSpanID(pcommon.SpanID{1})
			}
		}
	}
	for _, follow := range []bool{true, false} {
		cfg := testConfig()
		cfg.KeyBy = keyByTraceID
		cfg.TraceIDBuckets = 8
		cfg.FollowLinks = follow
		g := newGrouping(cfg, newHotKeys(cfg.HotKeys))
		td := ptrace.NewTraces()
		ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
		span(ss, ptrace.SpanKindConsumer, 12, 1, 9, 2, 3) // sub-keys 4; 1, 1, 2, 3
		span(ss, ptrace.SpanKindConsumer, 12)
		span(ss, ptrace.SpanKindServer, 12, 1)
		span(ss, ptrace.SpanKindConsumer, 13, 0) // trace 0's link without a span ID
		before := ptrace.NewTraces()
		td.CopyTo(before)
		g.add(td)
		assert.Equal(t, before, td, "the request is not modified")

		// sub-key → the links (their traces' low byte) of each span there, by kind.
		got := map[int][]string{}
		grp := g.groups[g.index[traceIDKey]]
		for k, sub := range grp.subs {
			if sub == (ptrace.Traces{}) {
				continue
			}
			spans := sub.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
			require.Equal(t, grp.spans[k], spans.Len())
			for i := 0; i < spans.Len(); i++ {
				s := spans.At(i)
				desc := s.Kind().String() + ":"
				for j := 0; j < s.Links().Len(); j++ {
					desc += string(rune('0' + s.Links().At(j).TraceID()[15]))
				}
				got[k] = append(got[k], desc)
			}
		}
		want := map[int][]string{
			1: {"Consumer:19"},
			2: {"Consumer:2"},
			3: {"Consumer:3"},
			4: {"Consumer:", "Server:1"},
			5: {"Consumer:0"},
		}
		if !follow {
			want = map[int][]string{4: {"Consumer:1923", "Consumer:", "Server:1"}, 5: {"Consumer:0"}}
		}
		assert.Equal(t, want, got, "follow_links %v", follow)
	}
}
