package tracegraph

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestWaitingEdgeSize(t *testing.T) {
	// README.md and configs/tracegraph.yaml quote this size.
	require.EqualValues(t, 136, unsafe.Sizeof(edge{}))
}

func TestPairTableFindInsertRemove(t *testing.T) {
	pt := newPairTable(1)
	key := func(i int) (pcommon.TraceID, pcommon.SpanID) {
		return pcommon.TraceID{byte(i), byte(i >> 8)}, pcommon.SpanID{byte(i)}
	}
	for i := range 100 {
		tr, sp := key(i)
		e := edge{trace: tr, span: sp, hash: pt.hashOf(tr, sp), client: uint32(i + 1)}
		pt.insert(&e, []uint32{uint32(i), noValue})
	}
	// Remove every other one; the rest are found with their dimensions, in arrival order.
	for i := 0; i < 100; i += 2 {
		tr, sp := key(i)
		id := pt.find(pt.hashOf(tr, sp), tr, sp, false)
		require.GreaterOrEqual(t, id, int32(0))
		pt.remove(id)
	}
	require.Equal(t, 50, pt.n)
	want := 1
	for id := pt.oldest; id >= 0; id = pt.edges[id].next {
		require.EqualValues(t, want+1, pt.edges[id].client)
		require.Equal(t, []uint32{uint32(want), noValue}, pt.dimsOf(id))
		want += 2
	}
	tr, sp := key(0)
	require.Equal(t, int32(-1), pt.find(pt.hashOf(tr, sp), tr, sp, false))
}

// BenchmarkPendingBytes reports the heap held per waiting half edge in a table of 100,000 (the
// default store.max_items), without and with three dimensions.
func BenchmarkPendingBytes(b *testing.B) {
	const n = 100_000
	for _, dims := range []int{0, 3} {
		b.Run(map[int]string{0: "no_dimensions", 3: "3_dimensions"}[dims], func(b *testing.B) {
			var per float64
			for range b.N {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				pt := newPairTable(dims)
				d := make([]uint32, 2*dims)
				for i := range n {
					tr := pcommon.TraceID{byte(i), byte(i >> 8), byte(i >> 16)}
					e := edge{trace: tr, hash: pt.hashOf(tr, pcommon.SpanID{})}
					pt.insert(&e, d)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				per = float64(after.HeapAlloc-before.HeapAlloc) / n
				runtime.KeepAlive(pt)
			}
			b.ReportMetric(per, "B/pending")
		})
	}
}
