package harness

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeSink records what it was sent; it refuses the first refuse sends.
type fakeSink struct {
	mu                    sync.Mutex
	taken                 map[int]int
	refuse                atomic.Int64
	delay                 time.Duration
	sent                  atomic.Int64
	inFlight, maxInFlight atomic.Int64
}

func (f *fakeSink) Send(_ context.Context, i int) error {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxInFlight.Load()
		if n <= m || f.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(f.delay)
	if f.refuse.Add(-1) >= 0 {
		return errors.New("refused")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.taken == nil {
		f.taken = map[int]int{}
	}
	f.taken[i]++
	f.sent.Add(1)
	return nil
}

func (*fakeSink) Close() error { return nil }

func smallPool(t *testing.T) *Pool {
	t.Helper()
	p, err := NewPool(Shape{Services: 2, SpanNames: 5}, 10, 1)
	require.NoError(t, err)
	return p
}

func TestGeneratorPacesAndCountsAcknowledgedSpans(t *testing.T) {
	pool := smallPool(t)
	sink := &fakeSink{}
	sink.refuse.Store(3)
	g := NewGenerator(pool, sink, 2000, 2) // 200 requests/s of 10 spans
	stop := make(chan struct{})
	time.AfterFunc(500*time.Millisecond, func() { close(stop) })
	g.Run(stop)

	assert.Equal(t, sink.sent.Load()*int64(pool.SpansPerRequest), g.Acked())
	assert.Equal(t, int64(3), g.Failures())
	// 100 requests are due in 0.5 s; a loaded machine (or -race) may fall behind, never ahead.
	assert.LessOrEqual(t, sink.sent.Load(), int64(101))
	assert.GreaterOrEqual(t, sink.sent.Load(), int64(10))
	assert.LessOrEqual(t, sink.maxInFlight.Load(), int64(2))
}

func TestGeneratorCountsMissedRequestsOfASlowSink(t *testing.T) {
	pool := smallPool(t)
	sink := &fakeSink{delay: 50 * time.Millisecond}
	g := NewGenerator(pool, sink, 10_000, 1) // 1000 requests/s, the sink takes 20/s, slack is 250
	stop := make(chan struct{})
	time.AfterFunc(600*time.Millisecond, func() { close(stop) })
	g.Run(stop)
	assert.Positive(t, g.Missed())
	assert.Less(t, g.Acked(), int64(3000))
}

func TestGeneratorMaxCyclesThePool(t *testing.T) {
	pool := smallPool(t)
	sink := &fakeSink{}
	g := NewGenerator(pool, sink, 0, 3)
	stop := make(chan struct{})
	time.AfterFunc(100*time.Millisecond, func() { close(stop) })
	g.Run(stop)
	require.Greater(t, sink.sent.Load(), int64(len(pool.Encoded)))
	sink.mu.Lock()
	defer sink.mu.Unlock()
	assert.Len(t, sink.taken, len(pool.Encoded))
	assert.Equal(t, sink.sent.Load()*int64(pool.SpansPerRequest), g.Acked())
}

// TestGeneratorCountsGraphSpansAndEdges checks that the generator counts the requests of a pool
// whose requests differ in size, as a call graph's do, by their own span and edge counts, refused
// sends not at all.
func TestGeneratorCountsGraphSpansAndEdges(t *testing.T) {
	p := smallPool(t)
	require.Greater(t, len(p.Encoded), 2)
	for i := range p.Encoded {
		p.Spans = append(p.Spans, 1+i%7)
		p.Edges = append(p.Edges, i%3)
	}
	sink := &fakeSink{delay: time.Millisecond}
	sink.refuse.Store(2)
	g := NewGenerator(p, sink, 0, 2)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Run(stop)
	}()
	// Past the refusals' backoff (50 ms each), so that some requests were taken.
	time.Sleep(300 * time.Millisecond)
	close(stop)
	<-done
	sink.mu.Lock()
	defer sink.mu.Unlock()
	var spans, edges int64
	for i, n := range sink.taken {
		spans += int64(n * p.Spans[i])
		edges += int64(n * p.Edges[i])
	}
	require.Positive(t, spans)
	require.Equal(t, spans, g.Acked())
	require.Equal(t, edges, g.Edges())
}
