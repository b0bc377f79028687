package intake

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type item struct{ n int }

func TestCapacityIsAPowerOfTwoOfAtLeastTwo(t *testing.T) {
	require.Equal(t, 2, New[item](0).Cap())
	require.Equal(t, 2, New[item](1).Cap())
	require.Equal(t, 8, New[item](5).Cap())
}

func TestDrainTakesWhatIsQueuedInOrder(t *testing.T) {
	q := New[item](8)
	require.Empty(t, q.Drain(nil), "draining an empty queue returns at once")
	for i := 0; i < 5; i++ {
		require.NoError(t, q.Put(context.Background(), &item{i}))
	}
	got := q.Drain(nil)
	require.Len(t, got, 5)
	for i, it := range got {
		require.Equal(t, i, it.n)
	}
	require.Zero(t, q.Len())
}

func TestConsumerIsWokenOnlyWhenItsBatchIsComplete(t *testing.T) {
	q := New[item](16)
	require.False(t, q.Arm(3))
	require.NoError(t, q.Put(context.Background(), &item{}))
	require.NoError(t, q.Put(context.Background(), &item{}))
	select {
	case <-q.Wake():
		t.Fatal("woken before the batch was complete")
	default:
	}
	require.NoError(t, q.Put(context.Background(), &item{}))
	select {
	case <-q.Wake():
	case <-time.After(time.Second):
		t.Fatal("not woken when the batch was complete")
	}
	require.Len(t, q.Drain(nil), 3)
	require.NoError(t, q.Put(context.Background(), &item{}))
	require.True(t, q.Arm(1), "Arm reports a batch that is already there")
	select {
	case <-q.Wake():
		t.Fatal("woken although the consumer was not sleeping: Arm found the batch")
	default:
	}
}

func TestFullRingWaitsBoundedByContext(t *testing.T) {
	q := New[item](2)
	require.NoError(t, q.Put(context.Background(), &item{1}))
	require.NoError(t, q.Put(context.Background(), &item{2}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.True(t, errors.Is(q.Put(ctx, &item{3}), context.DeadlineExceeded))
	require.Equal(t, uint64(1), q.Stats().FullWaits)

	done := make(chan error)
	go func() { done <- q.Put(context.Background(), &item{4}) }()
	// The waiting producer wakes the consumer (the ring is full whatever batch it asked for).
	q.Arm(100)
	select {
	case <-q.Wake():
	case <-time.After(time.Second):
		t.Fatal("a producer waiting on a full ring did not wake the consumer")
	}
	require.Len(t, q.Drain(nil), 2)
	require.NoError(t, <-done)
	got := q.Drain(nil)
	require.Len(t, got, 1)
	require.Equal(t, 4, got[0].n)
}

// Many producers, a tiny ring, a consumer that sleeps between batches: every item arrives
// exactly once.
func TestNoItemLostUnderContention(t *testing.T) {
	produceAndConsume(t, New[item](4), 16, 2000, func(int) int64 { return 0 })
}

// produceAndConsume puts producers × per items of the given sizes from as many goroutines, and
// consumes them as the aggregator does (Arm, Wake or a timeout, Drain, Release): every item must
// arrive exactly once, and the bytes held never pass the queue's bound.
func produceAndConsume(t *testing.T, q *Queue[item], producers, per int, sizeOf func(int) int64) {
	t.Helper()
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				n := p*per + i
				if err := q.PutSized(context.Background(), &item{n}, sizeOf(n)); err != nil {
					panic(err)
				}
			}
		}()
	}
	seen := make([]bool, producers*per)
	count := 0
	var buf []*item
	for count < producers*per {
		if !q.Arm(2) {
			select {
			case <-q.Wake():
			case <-time.After(time.Millisecond):
			}
		}
		q.Disarm()
		buf = q.Drain(buf[:0])
		if q.maxBytes > 0 {
			require.LessOrEqual(t, q.HeldBytes(), q.maxBytes)
		}
		for _, it := range buf {
			require.False(t, seen[it.n], "item %d twice", it.n)
			seen[it.n] = true
			count++
			q.Release(sizeOf(it.n))
		}
	}
	wg.Wait()
	require.Zero(t, q.Len())
	require.Zero(t, q.HeldBytes())
}

// closed reports whether Close was called.
func (g *Gate) closed() bool { return g.state.Load()&closedBit != 0 }

func TestGate(t *testing.T) {
	var g Gate
	require.True(t, g.Enter())
	closed := make(chan error)
	go func() { closed <- g.Close(context.Background()) }()
	require.Eventually(t, g.closed, time.Second, time.Millisecond)
	require.False(t, g.Enter(), "closed gate refuses")
	select {
	case <-closed:
		t.Fatal("Close returned while a caller was inside")
	case <-time.After(10 * time.Millisecond):
	}
	g.Exit()
	require.NoError(t, <-closed)

	var g2 Gate
	require.True(t, g2.Enter())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, g2.Close(ctx), context.DeadlineExceeded)
	g2.Exit()
	var g3 Gate
	require.NoError(t, g3.Close(context.Background()))
}

func TestFreeList(t *testing.T) {
	f := NewFreeList[item](2)
	require.Nil(t, f.Get())
	a, b, c := &item{1}, &item{2}, &item{3}
	f.Put(a)
	f.Put(b)
	f.Put(c) // full: dropped
	require.Same(t, a, f.Get())
	require.Same(t, b, f.Get())
	require.Nil(t, f.Get())
}

func TestBytesBoundWaitsUntilReleased(t *testing.T) {
	q := New[item](1024)
	q.LimitBytes(100)
	ctx := context.Background()
	require.NoError(t, q.PutSized(ctx, &item{1}, 60))
	require.NoError(t, q.PutSized(ctx, &item{2}, 40))
	require.Equal(t, int64(100), q.HeldBytes())

	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, q.PutSized(short, &item{3}, 1), context.DeadlineExceeded)
	require.Equal(t, int64(100), q.HeldBytes(), "a refused item holds nothing")
	require.Equal(t, uint64(1), q.Stats().BytesWaits)

	done := make(chan error)
	go func() { done <- q.PutSized(ctx, &item{4}, 50) }()
	// The waiting producer wakes the consumer although its batch is not complete.
	q.Arm(100)
	select {
	case <-q.Wake():
	case <-time.After(time.Second):
		t.Fatal("a producer waiting for bytes did not wake the consumer")
	}
	got := q.Drain(nil)
	require.Len(t, got, 2)
	// Draining frees ring slots, not bytes: the drained items are still being processed.
	select {
	case err := <-done:
		t.Fatalf("admitted before any release: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	q.Release(60)
	require.NoError(t, <-done)
	require.Equal(t, int64(90), q.HeldBytes())
	q.Release(40)
	q.Release(50)
	require.Zero(t, q.HeldBytes())
}

func TestItemLargerThanTheBoundPassesAlone(t *testing.T) {
	q := New[item](8)
	q.LimitBytes(10)
	ctx := context.Background()
	require.NoError(t, q.PutSized(ctx, &item{1}, 1000), "nothing held: admitted")
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, q.PutSized(short, &item{2}, 1), context.DeadlineExceeded)
	q.Drain(nil)
	q.Release(1000)
	require.NoError(t, q.PutSized(ctx, &item{3}, 1))
}

// Many producers of items of random sizes, a bound of a few items: every item arrives exactly
// once and the bytes held never pass the bound.
func TestNoItemLostUnderBytesBound(t *testing.T) {
	q := New[item](1024)
	q.LimitBytes(64)
	produceAndConsume(t, q, 8, 1000, func(n int) int64 { return int64(1 + n%31) })
}

func TestFreeListBytesBound(t *testing.T) {
	f := NewFreeList[item](8)
	f.LimitBytes(10, func(x *item) int64 { return int64(x.n) })
	a, b, c := &item{6}, &item{5}, &item{4}
	f.Put(a)
	f.Put(b) // 11 > 10: dropped
	f.Put(c)
	require.Equal(t, int64(10), f.HeldBytes())
	require.Same(t, a, f.Get())
	require.Equal(t, int64(4), f.HeldBytes())
	require.Same(t, c, f.Get())
	require.Nil(t, f.Get())
	require.Zero(t, f.HeldBytes())
}
