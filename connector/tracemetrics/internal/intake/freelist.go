package intake // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/intake"

import (
	"runtime"
	"time"

	"github.com/Workiva/go-datastructures/queue"
)

// FreeList recycles items from the consumer back to producers. Unlike sync.Pool it survives
// garbage collections, so pooled items keep the capacity they grew to and a steady state
// allocates nothing even across GC cycles. It is a second Workiva ring: Put offers without
// waiting (an item that does not fit is left to the GC), Get polls with a 1ns timeout, so it
// returns nil at once instead of spinning when the list is empty or contended.
type FreeList[T any] struct {
	ring *queue.RingBuffer
}

// NewFreeList returns a free list holding up to capacity items (a power of two >= 2).
func NewFreeList[T any](capacity int) *FreeList[T] {
	return &FreeList[T]{ring: queue.NewRingBuffer(uint64(max(capacity, 2)))}
}

// Get returns a recycled item, or nil. A Poll can miss an item whose Put is half done (slot
// reserved, not yet published) or lose a race with another Get; it is retried a few times
// while the list is not empty, so that a warm steady state does not allocate.
func (f *FreeList[T]) Get() *T {
	for try := 0; try < 8 && f.ring.Len() > 0; try++ {
		if v, err := f.ring.Poll(time.Nanosecond); err == nil {
			return v.(*T)
		}
		// The head slot may be reserved by a Put whose goroutine was preempted before it
		// published the item; yield so it can finish (with one P nothing else would run it),
		// rather than give up and make the caller allocate a fresh, cold item.
		runtime.Gosched()
	}
	return nil
}

// Put recycles x; it drops x when the list is full.
func (f *FreeList[T]) Put(x *T) {
	_, _ = f.ring.Offer(x)
}
