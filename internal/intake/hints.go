package intake // import "github.com/otelcol-red/otelcol-red/internal/intake"

import (
	"slices"
	"sync/atomic"
)

// SizeHints are the largest sizes a pipe's batches have needed lately, one per buffer a batch
// holds (slots the connector numbers). A batch taken from the free list is grown to them before
// its producer fills it, in one allocation per buffer, instead of doubling its way up over many
// requests: batches circulate through the FIFO free list in turn, and without hints each one
// would keep allocating until it had met the largest request itself (allocations long after the
// warm-up, 1–2 per 200-span request on a loaded host).
//
// "Lately" is the current flush interval and the one before it: Rotate, at each flush, forgets
// older maxima, so that after a burst of large requests the batches made for small traffic are
// small again (pooled batches keep the capacity they have either way). Hints that only grow
// would size every batch the free list ever makes for the burst, up to the limit, for the life
// of the process. A producer raising a hint while Rotate runs may see its raise forgotten: its
// next request of that size raises it again.
//
// Get and Raise are an atomic load, and a compare-and-swap only when a hint grows: no lock on
// the producers' path.
type SizeHints struct {
	limit int64
	cur   []atomic.Int64 // what batches are grown to: the largest since the last Rotate but one
	next  []atomic.Int64 // the largest since the last Rotate
}

// NewSizeHints returns hints for slots buffers, each at most limit: one huge request must not
// make every pooled batch huge; a larger request grows its own batch, as without hints.
func NewSizeHints(slots int, limit int64) *SizeHints {
	return &SizeHints{limit: limit, cur: make([]atomic.Int64, slots), next: make([]atomic.Int64, slots)}
}

// Get returns the hint of slot i.
func (h *SizeHints) Get(i int) int64 { return h.cur[i].Load() }

// Raise records that a batch needed n of slot i: a length (or a peak), not a capacity, or a
// batch grown to a hint would keep that hint alive after the traffic that set it is gone.
func (h *SizeHints) Raise(i, n int) {
	v := min(int64(n), h.limit)
	raiseTo(&h.cur[i], v)
	raiseTo(&h.next[i], v)
}

// Rotate starts a new interval: the hints become the largest sizes of the interval that ends.
// Consumer only, at a flush.
func (h *SizeHints) Rotate() {
	for i := range h.cur {
		h.cur[i].Store(h.next[i].Swap(0))
	}
}

func raiseTo(a *atomic.Int64, v int64) {
	for cur := a.Load(); v > cur && !a.CompareAndSwap(cur, v); cur = a.Load() {
	}
}

// Reserve returns s, empty, with room for n elements: a batch's buffer grown to its hint before
// its producer fills it.
func Reserve[T any](s []T, n int64) []T {
	if int64(cap(s)) < n {
		return make([]T, 0, n)
	}
	return s[:0]
}

// Regrow returns s with its content and room for n elements: a buffer a batch keeps across
// requests (a memo), grown to its hint.
func Regrow[T any](s []T, n int64) []T {
	if int64(cap(s)) < n {
		return slices.Grow(s, int(n)-len(s))
	}
	return s
}
