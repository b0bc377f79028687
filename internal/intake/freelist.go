package intake // import "github.com/otelcol-red/otelcol-red/internal/intake"

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/Workiva/go-datastructures/queue"
)

// FreeList recycles items from the consumer back to producers. Unlike sync.Pool it survives
// garbage collections, so pooled items keep the capacity they grew to and a steady state
// allocates nothing even across GC cycles. It is a second Workiva ring: Put offers without
// waiting (an item that does not fit is left to the GC), Get polls with a 1ns timeout, so it
// returns nil at once instead of spinning when the list is empty or contended.
//
// Items keep their capacity, so a list bounded only in items would keep a burst's largest items
// for good: LimitBytes bounds the bytes it retains as well.
type FreeList[T any] struct {
	ring *queue.RingBuffer

	// size reports an item's retained bytes; it must not change while the item is listed.
	size     func(*T) int64
	maxBytes int64
	held     atomic.Int64
}

// NewFreeList returns a free list holding up to capacity items (a power of two >= 2).
func NewFreeList[T any](capacity int) *FreeList[T] {
	return &FreeList[T]{ring: queue.NewRingBuffer(uint64(max(capacity, 2)))}
}

// LimitBytes bounds the bytes the list retains, as size reports them, to maxBytes (0: no
// bound): Put drops an item that would pass it. Call it before the first Put.
func (f *FreeList[T]) LimitBytes(maxBytes int64, size func(*T) int64) {
	f.maxBytes, f.size = max(maxBytes, 0), size
}

// HeldBytes returns the bytes the list retains (0 without LimitBytes).
func (f *FreeList[T]) HeldBytes() int64 { return f.held.Load() }

// Get returns a recycled item, or nil. A Poll can miss an item whose Put is half done (slot
// reserved, not yet published) or lose a race with another Get; it is retried a few times
// while the list is not empty, so that a warm steady state does not allocate.
func (f *FreeList[T]) Get() *T {
	for try := 0; try < 8 && f.ring.Len() > 0; try++ {
		if v, err := f.ring.Poll(time.Nanosecond); err == nil {
			x := v.(*T)
			if f.size != nil {
				f.held.Add(-f.size(x))
			}
			return x
		}
		// The head slot may be reserved by a Put whose goroutine was preempted before it
		// published the item; yield so it can finish (with one P nothing else would run it),
		// rather than give up and make the caller allocate a fresh, cold item.
		runtime.Gosched()
	}
	return nil
}

// Put recycles x; it drops x when the list is full, or when x would pass the byte bound.
func (f *FreeList[T]) Put(x *T) {
	if f.size == nil {
		_, _ = f.ring.Offer(x)
		return
	}
	n := f.size(x)
	if h := f.held.Add(n); f.maxBytes > 0 && h > f.maxBytes {
		f.held.Add(-n)
		return
	}
	if ok, _ := f.ring.Offer(x); !ok {
		f.held.Add(-n)
	}
}
