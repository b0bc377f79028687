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
