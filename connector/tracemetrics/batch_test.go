package tracemetrics

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/aggregate"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// A batch from the free list is grown to the largest batch seen before it reduces anything, so
// that batches circulating in turn do not each allocate their way up (alloc_test.go).
func TestSizeHintsPresizeFreshBatches(t *testing.T) {
	r := startConnector(t, NewFactory(), map[string]any{"dimensions": dims("http.method")})
	c := r.conn.(*connectorImp)
	red := c.reducer
	first := new(series.Batch)
	red.Reduce(first, benchInput(1000, 1000)[0])
	require.GreaterOrEqual(t, c.hints.Get(series.HintSeries), int64(1000))

	fresh := new(series.Batch)
	red.Reduce(fresh, benchInput(1000, 10)[0])
	require.Len(t, fresh.Series, 10)
	require.GreaterOrEqual(t, cap(fresh.Series), 1000, "series sized from the hint")
	require.GreaterOrEqual(t, cap(fresh.Arena), len(first.Arena)/2, "arena sized from the hint")
	// The series table's hint: internal/series TestTableSizedFromHint.
}

// One huge request does not make every pooled batch huge: hints stop at hintLimit.
func TestSizeHintsAreBounded(t *testing.T) {
	r := startConnector(t, NewFactory(), map[string]any{"dimensions": dims("http.method")})
	c := r.conn.(*connectorImp)
	red := c.reducer
	huge := benchInput(20_000, 20_000)[0]
	red.Reduce(new(series.Batch), huge)
	for i := range series.NumHints {
		require.LessOrEqual(t, c.hints.Get(i), int64(series.HintLimit), "hint %d", i)
	}
	small := new(series.Batch)
	red.Reduce(small, benchInput(1000, 10)[0])
	require.LessOrEqual(t, cap(small.Series), series.HintLimit)
	require.LessOrEqual(t, cap(small.Arena), 64*series.HintLimit)
}

// Hints follow recent traffic: once a flush interval has passed with small requests only, a
// large request before it no longer sizes new batches, nor the aggregator's wake count.
func TestSizeHintsForgetOldIntervals(t *testing.T) {
	r := startConnector(t, NewFactory(), map[string]any{"dimensions": dims("http.method")})
	c := r.conn.(*connectorImp)
	red := c.reducer
	red.Reduce(new(series.Batch), benchInput(1000, 1000)[0])
	small := benchInput(1000, 10)

	c.hints.Rotate() // a flush: the large request was in the interval that ended
	fresh := new(series.Batch)
	red.Reduce(fresh, small[0])
	require.GreaterOrEqual(t, cap(fresh.Series), 1000, "still sized for the previous interval's largest request")

	c.hints.Rotate() // an interval of small requests only
	fresh = new(series.Batch)
	red.Reduce(fresh, small[1])
	require.Less(t, cap(fresh.Series), 100, "sized for the small requests")
	require.Greater(t, aggregate.WakeCount(c.pipe.Queue.Cap(), int(c.hints.Get(series.HintSeries))), 16, "small batches wake the aggregator less often")

	// Through the connector: the producer raises the hints as it reduces, and a real flush
	// (which drains the ring before it swaps) rotates them.
	require.NoError(t, c.ConsumeTraces(context.Background(), benchInput(1000, 1000)[0]))
	require.GreaterOrEqual(t, c.hints.Get(series.HintSeries), int64(1000))
	r.flush()
	require.NoError(t, c.ConsumeTraces(context.Background(), small[2]))
	r.flush()
	require.Less(t, c.hints.Get(series.HintSeries), int64(100))
}
