package intake

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testBatch is a batch as the connectors keep theirs: contents, and the bytes a pipe counted.
type testBatch struct {
	values []int
	held   int64
}

var testBatches = Batch[testBatch]{
	Reset:     func(b *testBatch) { b.values = b.values[:0] },
	Empty:     func(b *testBatch) bool { return len(b.values) == 0 },
	Footprint: func(b *testBatch) int64 { return int64(cap(b.values)) * 8 },
	Held:      func(b *testBatch) *int64 { return &b.held },
}

func TestPipeCountsABatchFromSubmitToRecycle(t *testing.T) {
	p := NewPipe(4, 1<<20, testBatches)
	b, ok := p.Take()
	require.True(t, ok)
	b.values = append(b.values, 1, 2, 3)
	require.NoError(t, p.Submit(context.Background(), b))
	require.Equal(t, int64(cap(b.values))*8, p.Queue.HeldBytes(), "queued: its footprint is held")

	got := p.Queue.Drain(nil)
	require.Equal(t, []*testBatch{b}, got)
	// The consumer may grow a batch while it works on it; Recycle gives back what was counted.
	b.values = append(b.values, make([]int, 100)...)
	p.Recycle(b)
	require.Zero(t, p.Queue.HeldBytes())
	require.Equal(t, b, p.Free.Get(), "recycled into the free list")
	require.Empty(t, b.values, "reset")
}

func TestPipeKeepsAnEmptyBatchFromTheConsumer(t *testing.T) {
	p := NewPipe(4, 0, testBatches)
	b, ok := p.Take()
	require.True(t, ok)
	require.NoError(t, p.Submit(context.Background(), b))
	require.Zero(t, p.Queue.Len())
	require.Equal(t, b, p.Free.Get())
}

func TestPipeSubmitOnAFullRingGivesUpWithItsContext(t *testing.T) {
	p := NewPipe(2, 0, testBatches)
	for range 2 {
		b, _ := p.Take()
		b.values = append(b.values, 1)
		require.NoError(t, p.Submit(context.Background(), b))
	}
	b, _ := p.Take()
	b.values = append(b.values, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, p.Submit(ctx, b), context.DeadlineExceeded)
	require.Equal(t, 2, p.Queue.Len(), "the refused batch is not queued")
	require.Equal(t, b, p.Free.Get(), "it is recycled")
	require.Empty(t, b.values)
	// The producer left the gate: Close does not wait for it.
	require.NoError(t, p.Close(context.Background()))
}

func TestPipeCloseWaitsForAdmittedProducers(t *testing.T) {
	p := NewPipe(4, 0, testBatches)
	b, ok := p.Take()
	require.True(t, ok)
	closed := make(chan error, 1)
	go func() { closed <- p.Close(context.Background()) }()
	require.Eventually(t, func() bool {
		other, ok := p.Take()
		if ok { // admitted before Close began: it submits (an empty batch) and leaves
			require.NoError(t, p.Submit(context.Background(), other))
		}
		return !ok
	}, time.Second, time.Millisecond, "no producer is admitted once Close has begun")
	select {
	case <-closed:
		t.Fatal("Close returned while a producer had not submitted")
	case <-time.After(20 * time.Millisecond):
	}
	b.values = append(b.values, 7)
	require.NoError(t, p.Submit(context.Background(), b))
	require.NoError(t, <-closed)
	require.Equal(t, []*testBatch{b}, p.Queue.Drain(nil), "what was submitted before Close is for the consumer")
}

func TestPipeAllocatesNothingOnceWarm(t *testing.T) {
	p := NewPipe(4, 0, testBatches)
	var buf []*testBatch
	cycle := func() {
		b, _ := p.Take()
		b.values = append(b.values, 1, 2)
		_ = p.Submit(context.Background(), b)
		buf = p.Queue.Drain(buf[:0])
		for _, d := range buf {
			p.Recycle(d)
		}
	}
	cycle()
	require.Zero(t, testing.AllocsPerRun(100, cycle))
}

func TestAwait(t *testing.T) {
	a, b := make(chan struct{}), make(chan struct{})
	close(a)
	close(b)
	require.NoError(t, Await(context.Background(), a, b))

	never := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, Await(ctx, a, never), context.DeadlineExceeded)
}
