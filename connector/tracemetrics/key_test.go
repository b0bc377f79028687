package tracemetrics

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// attrSorter.appendSorted equals a plain stable sort by key, whether or not its memo of the
// previous key order applies: maps come with repeated key orders (memo hits), new orders, other
// key sets and lengths, and a key filter.
func TestAttrSorterMatchesStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	keys := []string{"service.name", "service.namespace", "host.name", "k8s.pod.name", "a", "", "zz", "service.names"}
	var sorter attrSorter
	var prev []string
	for step := 0; step < 20000; step++ {
		var order []string
		switch {
		case prev != nil && r.IntN(3) > 0:
			order = prev // same key order as the last map: the memo applies
		default:
			for _, i := range r.Perm(len(keys))[:r.IntN(len(keys)+1)] {
				order = append(order, keys[i])
			}
		}
		prev = order
		m := pcommon.NewMap()
		type kv struct{ k, v string }
		var pairs []kv
		for _, k := range order {
			v := fmt.Sprint(r.IntN(3))
			m.PutStr(k, v) // PutStr replaces an existing key, so pairs holds unique keys
			pairs = append(pairs, kv{k, v})
		}
		var keep map[string]struct{}
		if r.IntN(4) == 0 {
			keep = map[string]struct{}{"service.name": {}, "host.name": {}, "a": {}}
		}
		var want []byte
		var kept []kv
		for _, p := range pairs {
			if _, ok := keep[p.k]; keep == nil || ok {
				kept = append(kept, p)
			}
		}
		sort.SliceStable(kept, func(i, j int) bool { return kept[i].k < kept[j].k })
		want = binary.AppendUvarint(want, uint64(len(kept)))
		for _, p := range kept {
			want = appendStrValue(appendStr(want, p.k), p.v)
		}
		got := sorter.appendSorted([]byte("prefix"), m, keep)
		require.Equal(t, want, got[len("prefix"):], "step %d, order %q", step, order)
	}
}

// A dimension value's identity is its string form, as in spanmetrics: an int, a double or a
// bool and the string that spells it are one series (issue: 200 and "200" were two), and the
// series keeps the type of the first span's value in its attributes.
func TestValuesWithOneStringFormShareASeries(t *testing.T) {
	c, sink, clock, _ := startOurs(t, map[string]any{
		"aggregation_temporality": delta,
		"dimensions":              dims("http.response.status_code"),
	}, true)
	for _, tc := range []struct {
		first, second func(pcommon.Map)
		want          string
	}{
		{func(m pcommon.Map) { m.PutInt("k", 200) }, func(m pcommon.Map) { m.PutStr("k", "200") }, "Int:\"200\""},
		{func(m pcommon.Map) { m.PutStr("k", "200") }, func(m pcommon.Map) { m.PutInt("k", 200) }, "Str:\"200\""},
		{func(m pcommon.Map) { m.PutDouble("k", 1e21) }, func(m pcommon.Map) { m.PutStr("k", "1e+21") }, "Double:\"1e+21\""},
		{func(m pcommon.Map) { m.PutDouble("k", -2.5e-7) }, func(m pcommon.Map) { m.PutStr("k", "-2.5e-7") }, "Double:\"-2.5e-7\""},
		{func(m pcommon.Map) { m.PutDouble("k", 0.1) }, func(m pcommon.Map) { m.PutStr("k", "0.1") }, "Double:\"0.1\""},
		{func(m pcommon.Map) { m.PutBool("k", true) }, func(m pcommon.Map) { m.PutStr("k", "true") }, "Bool:\"true\""},
		{func(m pcommon.Map) { m.PutEmpty("k") }, func(m pcommon.Map) { m.PutStr("k", "") }, "Empty:\"\""},
	} {
		// A new span name per case: each case is a new series.
		name := "op-" + tc.want
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr(serviceNameKey, "svc")
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		for i := 0; i < 5; i++ {
			sp := spans.AppendEmpty()
			sp.SetName(name)
			put := tc.first
			if i >= 3 {
				put = tc.second
			}
			m := pcommon.NewMap()
			put(m)
			v, _ := m.Get("k")
			v.CopyTo(sp.Attributes().PutEmpty("http.response.status_code"))
		}
		require.NoError(t, c.ConsumeTraces(context.Background(), td))
		md := flushOnce(t, c, sink, clock, time.Minute)
		tot := sumUp(md)
		require.Equal(t, 1, tot.series, "want one series for %s", tc.want)
		require.EqualValues(t, 5, tot.calls)
		dp := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Sum().DataPoints().At(0)
		require.Contains(t, attrString(dp.Attributes()), "http.response.status_code="+tc.want)
	}
}
