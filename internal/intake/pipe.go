package intake // import "github.com/otelcol-red/otelcol-red/internal/intake"

import "context"

// Batch says what a Pipe needs to know of its batches; each connector fills its own kind
// (spans reduced to series deltas, to half edges) and the pipe carries any.
type Batch[T any] struct {
	// Reset empties a batch for reuse and keeps its memory.
	Reset func(*T)
	// Empty reports whether a batch holds nothing for the consumer.
	Empty func(*T) bool
	// Footprint is the bytes a batch holds, counted against the pipe's bound while it is
	// queued or being consumed, and while it waits in the free list.
	Footprint func(*T) int64
	// Held is where a batch keeps the bytes Submit counted for it, for Recycle to give back
	// the same amount though its footprint may have changed since.
	Held func(*T) *int64
}

// Pipe is a connector's intake whole: the MPSC ring its producers queue batches in (Queue),
// the batches kept for reuse (FreeList) and the gate Shutdown closes (Gate), with a batch's
// life between them: a producer takes one (Take), fills it and queues it (Submit); the
// consumer, done with it, recycles it (Recycle). No lock, and once the free list is warm no
// allocation, on either side.
type Pipe[T any] struct {
	// Queue is the ring; the consumer arms, waits on and drains it (queue.go).
	Queue *Queue[T]
	// Free holds the batches for reuse.
	Free  *FreeList[T]
	gate  Gate
	batch Batch[T]
}

// NewPipe returns a pipe whose ring holds ringSize batches (rounded up to a power of two) and
// at most maxBytes of them, queued or being consumed (0: no byte bound).
func NewPipe[T any](ringSize int, maxBytes int64, batch Batch[T]) *Pipe[T] {
	q := New[T](ringSize)
	q.LimitBytes(maxBytes)
	// Batches alive at once: the ring's, the consumer's drained ones (at most a ring's worth)
	// and one per producer; the free list holds them all, up to maxBytes of them: beyond, the
	// GC takes them back.
	free := NewFreeList[T](4 * q.Cap())
	free.LimitBytes(maxBytes, batch.Footprint)
	return &Pipe[T]{Queue: q, Free: free, batch: batch}
}

// Take admits a producer and returns an empty batch, or false once Close has begun. A
// producer admitted must Submit the batch.
func (p *Pipe[T]) Take() (*T, bool) {
	if !p.gate.Enter() {
		return nil, false
	}
	b := p.Free.Get()
	if b == nil {
		b = new(T)
	}
	return b, true
}

// Submit queues b, which Take returned, and lets the producer go; an empty batch goes back to
// the free list. When the ring or the byte bound is full it waits for room until ctx is done,
// and then returns the context's error with b recycled: nothing of it reaches the consumer.
func (p *Pipe[T]) Submit(ctx context.Context, b *T) error {
	defer p.gate.Exit()
	if p.batch.Empty(b) {
		p.batch.Reset(b)
		p.Free.Put(b)
		return nil
	}
	held := p.batch.Held(b)
	*held = p.batch.Footprint(b)
	if err := p.Queue.PutSized(ctx, b, *held); err != nil {
		p.batch.Reset(b)
		p.Free.Put(b)
		return err
	}
	return nil
}

// Recycle gives back the bytes of a batch the consumer has finished with, and the batch to
// the free list. Consumer only.
func (p *Pipe[T]) Recycle(b *T) {
	p.Queue.Release(*p.batch.Held(b))
	p.batch.Reset(b)
	p.Free.Put(b)
}

// Close refuses new producers and waits for those admitted to submit, or for ctx to be done.
// The consumer then drains what they queued.
func (p *Pipe[T]) Close(ctx context.Context) error { return p.gate.Close(ctx) }

// Await waits for each of done to be closed, in order, or for ctx to be done, and then
// returns the context's error: a connector's Shutdown waiting for its goroutines' last work.
func Await(ctx context.Context, done ...<-chan struct{}) error {
	for _, d := range done {
		select {
		case <-d:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
