package pipeline

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/intake"
)

// testBatch is a request reduced to its span count.
type testBatch struct {
	spans int
	held  int64
}

var testBatches = intake.Batch[testBatch]{
	Reset:     func(b *testBatch) { b.spans = 0 },
	Empty:     func(b *testBatch) bool { return b.spans == 0 },
	Footprint: func(*testBatch) int64 { return 8 },
	Held:      func(b *testBatch) *int64 { return &b.held },
}

// interval is what the test consumer fills: the spans applied since the last swap, and the
// requests of bigSpans spans among them.
type interval struct{ spans, big int }

const bigSpans = 1000

// counting is a Consumer and a Flusher that counts spans: what each flush held, and
// in all. Its flushes wait while hold is set.
type counting struct {
	active  *interval
	wake    int
	rounds  atomic.Int64
	swaps   atomic.Int64
	finals  atomic.Int64
	house   [2]atomic.Int64
	started atomic.Int64

	mu      sync.Mutex
	flushes []int
	big     []int
	hold    chan struct{} // nil: flushes do not wait
}

func (c *counting) Apply(b *testBatch, _ int64) {
	c.active.spans += b.spans
	if b.spans == bigSpans {
		c.active.big++
	}
}
func (c *counting) Applied(int, int64) { c.rounds.Add(1) }
func (c *counting) WakeItems() int     { return c.wake }
func (c *counting) Start(now int64)    { c.started.Store(now) }

func (c *counting) Swap(spare *interval, final bool) *interval {
	full := c.active
	c.active = spare
	c.swaps.Add(1)
	if final {
		c.finals.Add(1)
	}
	return full
}

func (c *counting) Flush(full *interval) {
	c.mu.Lock()
	hold := c.hold
	c.mu.Unlock()
	if hold != nil {
		<-hold
	}
	c.mu.Lock()
	c.flushes = append(c.flushes, full.spans)
	c.big = append(c.big, full.big)
	c.mu.Unlock()
	*full = interval{}
}

func (c *counting) flushed() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.flushes...)
}

func (c *counting) bigFlushed(i int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.big[i]
}

func (c *counting) total() int {
	n := 0
	for _, v := range c.flushed() {
		n += v
	}
	return n
}

var errTestShutdown = errors.New("test stage is shut down")

type testStage struct {
	*Stage[testBatch, *interval]
	c                  *counting
	clock              *clockwork.FakeClock
	refused, postponed atomic.Int64
	closed             atomic.Int64
}

func newTestStage(t *testing.T, flushEvery time.Duration, duties []time.Duration, ringSize int) *testStage {
	ts := &testStage{c: &counting{active: &interval{}, wake: 4}, clock: clockwork.NewFakeClock()}
	var ds []Duty
	for i, every := range duties {
		ds = append(ds, Duty{Every: every, Run: func(int64) { ts.c.house[i].Add(1) }})
	}
	ts.Stage = New(Settings[testBatch, *interval]{
		Pipe:          intake.NewPipe(ringSize, 0, testBatches),
		Reduce:        func(b *testBatch, td ptrace.Traces) { b.spans += td.SpanCount() },
		Consumer:      ts.c,
		Flusher:       ts.c,
		Spare:         &interval{},
		Clock:         ts.clock,
		FlushInterval: flushEvery,
		Duties:        ds,
		ErrShutdown:   errTestShutdown,
		Refused:       &ts.refused,
		Postponed:     &ts.postponed,
		Closed:        func() { ts.closed.Add(1) },
	})
	t.Cleanup(func() { _ = ts.Shutdown(context.Background()) })
	return ts
}

func spans(n int) ptrace.Traces {
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	for range n {
		ss.Spans().AppendEmpty()
	}
	return td
}

// Shutdown drains and flushes a last time, once, whatever the number of calls; a stage shut
// down refuses requests and counts their spans.
func TestShutdownFlushesEverythingOnce(t *testing.T) {
	s := newTestStage(t, time.Minute, nil, 16)
	require.NoError(t, s.Start(context.Background(), nil))
	require.NoError(t, s.Start(context.Background(), nil))
	for range 100 {
		require.NoError(t, s.ConsumeTraces(context.Background(), spans(3)))
	}
	require.NoError(t, s.Shutdown(context.Background()))
	require.NoError(t, s.Shutdown(context.Background()))
	require.EqualValues(t, 1, s.closed.Load(), "Closed runs once")
	require.Equal(t, 300, s.c.total())
	require.EqualValues(t, 1, s.c.finals.Load())
	require.ErrorIs(t, s.ConsumeTraces(context.Background(), spans(5)), errTestShutdown)
	require.EqualValues(t, 5, s.refused.Load())
}

// A stage never started shuts down at once, and refuses afterwards.
func TestShutdownWithoutStart(t *testing.T) {
	s := newTestStage(t, time.Minute, nil, 16)
	require.NoError(t, s.ConsumeTraces(context.Background(), spans(1)))
	require.NoError(t, s.Shutdown(context.Background()))
	require.ErrorIs(t, s.ConsumeTraces(context.Background(), spans(2)), errTestShutdown)
	require.EqualValues(t, 2, s.refused.Load())
	require.Zero(t, s.c.swaps.Load())
}

// A request that finds the ring full waits for room until its context is done, then is
// refused whole.
func TestFullRingRefusesWhenTheContextEnds(t *testing.T) {
	s := newTestStage(t, time.Minute, nil, 2) // not started: nothing drains
	for range 2 {
		require.NoError(t, s.ConsumeTraces(context.Background(), spans(1)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, s.ConsumeTraces(ctx, spans(7)), context.DeadlineExceeded)
	require.EqualValues(t, 7, s.refused.Load())
}

// The tick rule: a flush holds every span whose Consume returned before the tick, also while
// producers keep the consumer busy.
func TestFlushHoldsEverySpanConsumedBeforeTheTick(t *testing.T) {
	s := newTestStage(t, time.Second, nil, 64)
	require.NoError(t, s.Start(context.Background(), nil))
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				_ = s.ConsumeTraces(context.Background(), spans(1))
			}
		})
	}
	for round := range 20 {
		// Requests that returned before the tick, told apart by their size.
		for range 10 + round {
			require.NoError(t, s.ConsumeTraces(context.Background(), spans(bigSpans)))
		}
		flushes := len(s.c.flushed())
		require.NoError(t, s.clock.BlockUntilContext(context.Background(), 1))
		s.clock.Advance(time.Second)
		require.Eventually(t, func() bool { return len(s.c.flushed()) > flushes }, 10*time.Second, time.Millisecond)
		require.Equal(t, 10+round, s.c.bigFlushed(flushes), "round %d: every request consumed before the tick, none after", round)
	}
	stop.Store(true)
	wg.Wait()
}

// A tick that finds the flush goroutine busy is postponed, not lost: the swap comes as soon as
// the buffer comes back, without waiting for the next tick, and every span is flushed once.
func TestBusyFlushIsPostponed(t *testing.T) {
	s := newTestStage(t, time.Second, nil, 64)
	hold := make(chan struct{})
	s.c.mu.Lock()
	s.c.hold = hold
	s.c.mu.Unlock()
	require.NoError(t, s.Start(context.Background(), nil))
	require.NoError(t, s.ConsumeTraces(context.Background(), spans(1)))
	require.NoError(t, s.clock.BlockUntilContext(context.Background(), 1))
	s.clock.Advance(time.Second) // swapped; the flush waits on hold
	require.Eventually(t, func() bool { return s.c.swaps.Load() == 1 && !s.Idle() }, 5*time.Second, time.Millisecond)
	require.NoError(t, s.ConsumeTraces(context.Background(), spans(2)))
	s.clock.Advance(time.Second) // busy: postponed
	require.Eventually(t, func() bool { return s.postponed.Load() == 1 }, 5*time.Second, time.Millisecond)
	require.EqualValues(t, 1, s.c.swaps.Load())

	s.c.mu.Lock()
	s.c.hold = nil
	s.c.mu.Unlock()
	close(hold)
	require.Eventually(t, func() bool { return len(s.c.flushed()) == 2 }, 5*time.Second, time.Millisecond)
	require.Equal(t, []int{1, 2}, s.c.flushed(), "the postponed interval, flushed once the buffer came back")
	require.NoError(t, s.Shutdown(context.Background()))
	require.Equal(t, 3, s.c.total())
}

// Without a flush interval every round that applied batches is flushed, and no other.
func TestNoIntervalFlushesEveryRound(t *testing.T) {
	s := newTestStage(t, 0, nil, 64)
	s.c.wake = 1 // as a connector without an interval asks: every request wakes it
	require.NoError(t, s.Start(context.Background(), nil))
	for i := range 50 {
		require.NoError(t, s.ConsumeTraces(context.Background(), spans(1)))
		// One request at a time: each round holds what was queued since the last.
		require.Eventually(t, func() bool { return s.c.total() == i+1 }, 5*time.Second, time.Millisecond)
	}
	require.Equal(t, s.c.rounds.Load(), s.c.swaps.Load(), "one flush per round that applied batches")
}

// Each duty runs on its own ticker, also while nothing is consumed; the consumer learns when
// the stage started.
func TestDuties(t *testing.T) {
	s := newTestStage(t, time.Hour, []time.Duration{time.Second, 3 * time.Second}, 16)
	require.NoError(t, s.Start(context.Background(), nil))
	require.Equal(t, s.clock.Now().UnixNano(), s.c.started.Load())
	for i := range 6 {
		require.NoError(t, s.clock.BlockUntilContext(context.Background(), 3))
		s.clock.Advance(time.Second)
		require.Eventually(t, func() bool {
			return s.c.house[0].Load() == int64(i+1) && s.c.house[1].Load() == int64((i+1)/3)
		}, 5*time.Second, time.Millisecond)
	}
	require.Zero(t, s.c.swaps.Load())
}
