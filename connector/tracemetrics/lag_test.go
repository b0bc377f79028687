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
)

// Totals short of the input after the last span are lag, not loss. Through the binary, with
// the 15 s flush and one core, the calls on /metrics were 0.04% short of the spans sent half a
// minute after the last one. Here an aggregator is overloaded (a ring of 4 batches, producers
// that keep it full) with the shipped limits on and a service whose span names explode: a
// flush taken on time holds what was applied before its swap, and the spans accepted after
// that wait in the ring or the active buffer. While the load lasts the flushed calls are
// short of the accepted spans; none is ever refused; and once the load stops, the next flush
// brings the calls to exactly the spans accepted, with delta and cumulative temporality.
func TestShortTotalsAfterTheLastSpanAreLagNotLoss(t *testing.T) {
	for _, temporality := range []string{delta, cumulative} {
		t.Run(temporality, func(t *testing.T) {
			c, sink, clock, _ := startOurs(t, map[string]any{
				"ring_size":                 4,
				"aggregation_temporality":   temporality,
				"metrics_flush_interval":    time.Second,
				"max_series_per_service":    500,
				"max_cardinality_per_label": 50,
				"dimensions":                dims("order.id"),
			}, true)
			const producers, perCall = 4, 500
			var stop atomic.Bool
			var accepted atomic.Int64
			var wg sync.WaitGroup
			for p := range producers {
				wg.Go(func() {
					for call := 0; !stop.Load(); call++ {
						var spans []labelSpan
						for i := range perCall {
							// An exploding span name and an exploding attribute, and real operations.
							name := fmt.Sprintf("op-%d", i%20)
							if i%2 == 0 {
								name = fmt.Sprintf("GET /orders/%d-%d-%d", p, call, i)
							}
							spans = append(spans, labelSpan{svc: fmt.Sprintf("svc-%d", i%3), name: name, order: fmt.Sprintf("%d-%d-%d", p, call, i),
								status: ptrace.StatusCode(i % 3)})
						}
						if err := c.ConsumeTraces(context.Background(), labelTraces(spans)); err != nil {
							panic(err)
						}
						accepted.Add(perCall)
					}
				})
			}
			flushed := func() int64 {
				var n int64
				for _, md := range sink.AllMetrics() {
					n += sumUp(md).calls
				}
				return n
			}
			require.Eventually(t, func() bool { return c.pipe.Queue.Stats().FullWaits > 50 }, 30*time.Second, time.Millisecond)
			for range 3 {
				require.NoError(t, clock.BlockUntilContext(context.Background(), 1))
				n := c.tel.Flushes.Load()
				clock.Advance(time.Second)
				require.Eventually(t, func() bool { return c.tel.Flushes.Load() > n }, time.Minute, time.Millisecond)
			}
			stop.Store(true)
			wg.Wait()
			total := accepted.Load()
			lastFlushes := flushed()
			if temporality == cumulative {
				lastFlushes = sumUp(sink.AllMetrics()[len(sink.AllMetrics())-1]).calls
			}
			require.Less(t, lastFlushes, total, "under load the flushed calls lag the accepted spans")
			require.Zero(t, c.tel.RefusedSpans.Load(), "no span refused")

			md := flushOnce(t, c, sink, clock, time.Second)
			got := flushed()
			if temporality == cumulative {
				got = sumUp(md).calls
			}
			require.Equal(t, total, got, "the flush after the load holds every span accepted: lag, not loss")
		})
	}
}
