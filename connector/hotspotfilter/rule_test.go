package hotspotfilter

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Each evaluation takes an OTTL span context from pkg/ottl's pool and returns it (Close) before
// the next: a context used after its return, or handed out twice, would judge a span by another
// span's fields. Spans alternate between every combination of the condition's three parts and
// are judged from several goroutines at once (go test -race checks the hand-offs).
func TestConditionJudgesEachSpanByItsOwnFields(t *testing.T) {
	cond, err := parseCondition(`IsRootSpan() == false and kind == SPAN_KIND_CLIENT and attributes["db.system"] == "redis"`,
		componenttest.NewNopTelemetrySettings())
	require.NoError(t, err)
	r := &rule{cond: cond}

	var spans []testSpan
	var want []bool
	for i := range uint64(64) {
		s := testSpan{service: "cart", kind: ptrace.SpanKindServer, id: i + 1}
		if i&1 != 0 {
			s.parent = 1000
		}
		if i&2 != 0 {
			s.kind = ptrace.SpanKindClient
		}
		if i&4 != 0 {
			s.dbSystem = "redis"
		}
		spans = append(spans, s)
		want = append(want, i&7 == 7)
	}
	td := makeTraces(spans...)
	rs := td.ResourceSpans().At(0)
	ss := rs.ScopeSpans().At(0)
	require.Equal(t, len(spans), ss.Spans().Len())

	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				for i := range ss.Spans().Len() {
					if got := r.matches(context.Background(), rs, ss, ss.Spans().At(i)); got != want[i] {
						t.Errorf("span %d: matches = %v, want %v", i, got, want[i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// The pooled span context costs no allocation: a condition on fields OTTL reads without boxing
// (the kind, the parent span ID) allocates nothing per span once the pool is warm. A context
// not returned to the pool would cost three.
func TestConditionAllocatesNothingPerSpan(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	cond, err := parseCondition(`kind == SPAN_KIND_CLIENT and IsRootSpan() == false`, componenttest.NewNopTelemetrySettings())
	require.NoError(t, err)
	r := &rule{cond: cond}
	td := makeTraces(testSpan{service: "cart", kind: ptrace.SpanKindClient, id: 2, parent: 1})
	rs := td.ResourceSpans().At(0)
	ss := rs.ScopeSpans().At(0)
	span := ss.Spans().At(0)
	require.True(t, r.matches(context.Background(), rs, ss, span))
	allocs := testing.AllocsPerRun(1000, func() {
		r.matches(context.Background(), rs, ss, span)
	})
	require.Zero(t, allocs)
}
