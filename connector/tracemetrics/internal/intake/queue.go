// Package intake hands work items from many producer goroutines to one consumer goroutine.
//
// Items travel through a Workiva/go-datastructures queue.RingBuffer (a bounded Vyukov MPMC ring:
// per-slot sequence numbers, one CAS per Offer, no lock). The ring has known edges, and this
// package keeps every one of them away from its callers:
//
//   - Get on an empty ring spins with runtime.Gosched (100% CPU, their #150). The consumer here
//     never calls Get unless the queued counter says a published item is waiting; it sleeps on a
//     channel otherwise.
//   - Offer can report "full" under contention while there is room (their #213). Put retries while
//     Len() < Cap() and treats the ring as full only when it really is.
//   - Capacity 1 breaks the ring (their #218). New rounds every capacity up to a power of two >= 2.
//   - Items are stored as interface{}; callers pass pointers (to pooled items), which box without
//     allocating.
//
// Batched signalling (after DoorDash's batch span processor): the consumer says how many items it
// wants with Arm, then sleeps on Wake. A producer wakes it only when the number of queued items
// reaches that batch size, so the consumer is never woken per item; a timer in the consumer's own
// select covers quiet periods.
//
// A full ring applies backpressure: Put waits, bounded by its context, until the consumer has made
// room. Dropping would lose data the caller believes accepted; blocking without bound would hang a
// receiver. Waits are counted (Stats.FullWaits) so a too-small ring is visible.
package intake // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/intake"

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/Workiva/go-datastructures/queue"
)

// errDisposed is returned by Put if the ring was disposed; this package never disposes it
// (a disposed ring refuses Get too, which would strand queued items).
var errDisposed = errors.New("intake ring disposed")

// Queue is a bounded multi-producer single-consumer queue of *T with batched signalling.
// Put may be called from any number of goroutines; Arm, Wake and Drain only from one consumer.
type Queue[T any] struct {
	ring *queue.RingBuffer

	// queued counts items whose Offer has completed and that Drain has not taken yet.
	// It is incremented after the Offer, so it never overstates what Get will find.
	queued atomic.Int64
	// want is the batch size the sleeping consumer asked for; 0 while it is awake.
	want atomic.Int64
	// wake has capacity 1: a producer that completes the consumer's batch leaves one token.
	wake chan struct{}

	// The room signal is used only on the slow path (ring full): producers that must wait take
	// the current channel under spaceMu; the consumer closes it after making room.
	spaceMu     sync.Mutex
	spaceCh     chan struct{}
	roomWaiters atomic.Int32

	lostOffers atomic.Uint64
	fullWaits  atomic.Uint64
}

// Stats are cumulative counters of a Queue.
type Stats struct {
	// LostOffers counts Offer calls that failed under contention while the ring had room
	// and were retried (go-datastructures #213).
	LostOffers uint64
	// FullWaits counts Put calls that found the ring full and had to wait for room.
	FullWaits uint64
}

// New returns a queue holding up to capacity items, rounded up to a power of two, at least 2.
func New[T any](capacity int) *Queue[T] {
	if capacity < 2 {
		capacity = 2
	}
	return &Queue[T]{
		ring:    queue.NewRingBuffer(uint64(capacity)),
		wake:    make(chan struct{}, 1),
		spaceCh: make(chan struct{}),
	}
}

// Cap returns the capacity of the ring.
func (q *Queue[T]) Cap() int { return int(q.ring.Cap()) }

// Len returns the number of items queued and not yet drained.
func (q *Queue[T]) Len() int { return int(q.queued.Load()) }

// Stats returns the queue's counters.
func (q *Queue[T]) Stats() Stats {
	return Stats{
		LostOffers: q.lostOffers.Load(),
		FullWaits:  q.fullWaits.Load(),
	}
}

// Put publishes item. When the ring is full it waits for room until ctx is done, and then
// returns ctx.Err() without having queued the item. It never allocates on the fast path.
func (q *Queue[T]) Put(ctx context.Context, item *T) error {
	lost := 0
	for {
		ok, err := q.ring.Offer(item)
		if err != nil {
			return errDisposed
		}
		if ok {
			break
		}
		if q.ring.Len() < q.ring.Cap() {
			// Lost a CAS race (or a slot being released by Get); there is room, so try again.
			q.lostOffers.Add(1)
			lost++
			if lost%16 == 0 {
				runtime.Gosched()
			}
			continue
		}
		if err := q.waitForRoom(ctx); err != nil {
			return err
		}
	}
	n := q.queued.Add(1)
	if w := q.want.Load(); w > 0 && n >= w && q.want.CompareAndSwap(w, 0) {
		q.signal()
	}
	return nil
}

func (q *Queue[T]) signal() {
	select {
	case q.wake <- struct{}{}:
	default: // a token is already there
	}
}

func (q *Queue[T]) waitForRoom(ctx context.Context) error {
	q.fullWaits.Add(1)
	q.spaceMu.Lock()
	ch := q.spaceCh
	q.roomWaiters.Add(1)
	q.spaceMu.Unlock()
	defer q.roomWaiters.Add(-1)

	// Registered before this check: a consumer that drains after it sees roomWaiters > 0
	// and closes ch, so the wakeup cannot be missed.
	if q.ring.Len() < q.ring.Cap() {
		return nil
	}
	// The ring is full, so the consumer's batch is complete whatever it asked for; make sure
	// it is awake.
	q.want.Store(0)
	q.signal()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Arm tells producers the consumer wants batch items before it is woken. It returns true
// when that many are already queued (the caller should Drain instead of sleeping).
// Consumer only.
func (q *Queue[T]) Arm(batch int) bool {
	if batch < 1 {
		batch = 1
	}
	q.want.Store(int64(batch))
	// Re-check after publishing want: a producer that queued in between may have missed it.
	if q.queued.Load() >= int64(batch) {
		q.want.Store(0)
		return true
	}
	return false
}

// Disarm stops producers from waking the consumer. Consumer only.
func (q *Queue[T]) Disarm() { q.want.Store(0) }

// Wake returns the channel a producer signals when the armed batch is complete.
func (q *Queue[T]) Wake() <-chan struct{} { return q.wake }

// Drain takes every item queued when it is called, appends them to buf and returns it.
// It calls Get only for items the queued counter has seen published, so it never spins on an
// empty ring. (Get may briefly yield while a producer that reserved an earlier slot finishes
// writing it; that producer is between two atomic operations and needs no consumer action.)
// Consumer only.
func (q *Queue[T]) Drain(buf []*T) []*T {
	n := q.queued.Load()
	for i := int64(0); i < n; i++ {
		v, err := q.ring.Get()
		if err != nil {
			break
		}
		buf = append(buf, v.(*T))
	}
	q.queued.Add(-n)
	if n > 0 && q.roomWaiters.Load() > 0 {
		q.spaceMu.Lock()
		close(q.spaceCh)
		q.spaceCh = make(chan struct{})
		q.spaceMu.Unlock()
	}
	return buf
}
