package tracemetrics

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A batch from the free list is grown to the largest batch seen before it reduces anything, so
// that batches circulating in turn do not each allocate their way up (alloc_test.go).
func TestSizeHintsPresizeFreshBatches(t *testing.T) {
	r := startConnector(t, NewFactory(), map[string]any{"dimensions": dims("http.method")})
	red := r.conn.(*connectorImp).reducer
	first := new(deltaBatch)
	red.reduce(first, benchInput(1000, 1000)[0])
	require.GreaterOrEqual(t, red.hints.series.Load(), int64(1000))

	fresh := new(deltaBatch)
	red.reduce(fresh, benchInput(1000, 10)[0])
	require.Len(t, fresh.series, 10)
	require.GreaterOrEqual(t, cap(fresh.series), 1000, "series sized from the hint")
	require.GreaterOrEqual(t, cap(fresh.arena), len(first.arena)/2, "arena sized from the hint")
	require.GreaterOrEqual(t, cap(fresh.table), 2048, "table sized from the hint")
}

// One huge request does not make every pooled batch huge: hints stop at hintLimit.
func TestSizeHintsAreBounded(t *testing.T) {
	r := startConnector(t, NewFactory(), map[string]any{"dimensions": dims("http.method")})
	red := r.conn.(*connectorImp).reducer
	huge := benchInput(20_000, 20_000)[0]
	red.reduce(new(deltaBatch), huge)
	for name, h := range map[string]int64{
		"resources": red.hints.resources.Load(), "series": red.hints.series.Load(), "obs": red.hints.obs.Load(),
		"arena": red.hints.arena.Load(), "table": red.hints.table.Load(),
	} {
		require.LessOrEqual(t, h, int64(hintLimit), name)
	}
	small := new(deltaBatch)
	red.reduce(small, benchInput(1000, 10)[0])
	require.LessOrEqual(t, cap(small.series), hintLimit)
	require.LessOrEqual(t, cap(small.arena), 64*hintLimit)
}
