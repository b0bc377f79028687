package series

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview/traceviewtest"
)

// AppendSorted equals a plain stable sort by key, whether or not its memo of the
// previous key order applies: maps come with repeated key orders (memo hits), new orders, other
// key sets and lengths, and a key filter.
func TestAttrSorterMatchesStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	keys := []string{"service.name", "service.namespace", "host.name", "k8s.pod.name", "a", "", "zz", "service.names"}
	var sorter AttrSorter
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
			want = AppendStrValue(appendStr(want, p.k), p.v)
		}
		got := AppendSorted(&sorter, []byte("prefix"), traceviewtest.Attrs[traceview.Pdata](t, m), keep, nil)
		require.Equal(t, want, got[len("prefix"):], "step %d, order %q", step, order)
	}
}
