package tracemetrics

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// manySeries returns one request of n spans, each of its own series.
func manySeries(n int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(series.ServiceNameKey, "svc")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	for i := 0; i < n; i++ {
		sp := spans.AppendEmpty()
		sp.SetName(fmt.Sprintf("op-%d", i))
		sp.SetStartTimestamp(1)
		sp.SetEndTimestamp(2_000_001)
	}
	return td
}

// copyBatch makes dst an exact copy of src's reduced content.
func copyBatch(dst, src *series.Batch) {
	dst.TS = src.TS
	dst.Spans = src.Spans
	dst.Resources = append(dst.Resources[:0], src.Resources...)
	dst.Series = append(dst.Series[:0], src.Series...)
	dst.Obs = append(dst.Obs[:0], src.Obs...)
	dst.Exemplars = append(dst.Exemplars[:0], src.Exemplars...)
	dst.Arena = append(dst.Arena[:0], src.Arena...)
}

// Under sustained overload (the ring full at every Drain) the flush still happens at the
// tick. Producers here queue copies of one pre-reduced batch of 2000 series (saturate): a
// copy costs a small fraction of what applying it costs, so the aggregator finds the ring
// refilled after every round, as it does when many receivers outpace it.
//
// The bound is exact, not timed: the swap happens at the latest after the drain round that
// is in progress when the tick arrives, so the first flush holds at most the batches published
// when the tick was sent plus one ring's worth. Before the drain loop watched the timer, the
// aggregator left the loop only when the ring ran empty, which a saturated ring does not, and
// the flush carried whatever was published until the load stopped.
func TestFlushOnTimeUnderOverload(t *testing.T) {
	const producers, seriesPerBatch = 4, 2000 // saturate's batch
	c, sink, clock, _ := startOurs(t, map[string]any{
		"ring_size":               4,
		"aggregation_temporality": delta,
		"metrics_flush_interval":  time.Second,
	}, true)
	var stop atomic.Bool
	var queued atomic.Int64 // batches the producers have started to queue
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			saturate(c, &stop, &queued)
		}()
	}
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	require.Eventually(t, func() bool { return c.pipe.Queue.Stats().FullWaits > 100 }, 30*time.Second, time.Millisecond)

	require.NoError(t, clock.BlockUntilContext(context.Background(), 1))
	clock.Advance(time.Second) // the fake ticker's channel holds the tick when Advance returns
	// Counted before each Put returns, so this bounds from above what was published at the tick.
	publishedAtTick := queued.Load()
	require.Eventually(t, func() bool { return c.tel.Flushes.Load() >= 1 }, time.Minute, time.Millisecond,
		"no flush under overload")
	// Keep the load on until the bound could be exceeded, so that passing means something.
	bound := publishedAtTick + int64(c.pipe.Queue.Cap())
	require.Eventually(t, func() bool { return queued.Load() > 2*bound }, time.Minute, time.Millisecond)
	stop.Store(true)
	wg.Wait()

	var flushed int64
	for _, md := range sink.AllMetrics() {
		flushed += sumUp(md).calls
	}
	require.Zero(t, flushed%seriesPerBatch)
	batches := flushed / seriesPerBatch
	require.Positive(t, batches)
	require.LessOrEqual(t, batches, bound,
		"the first flush came late: it holds batches published after the tick (%d at the tick, ring of %d)", publishedAtTick, c.pipe.Queue.Cap())
}
