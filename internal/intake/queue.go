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
//
// The ring counts items, and items differ in size by orders of magnitude (a request of ten spans
// of one series, a request of ten thousand new series). With LimitBytes the queue also bounds the
// bytes of the items put and not yet released by the consumer (queued, or drained and still
// being processed): a producer whose item would pass the bound waits like one that finds the ring
// full. Without it, producers on many cores that outpace the one consumer fill the ring with its
// capacity in large items, and the memory of an instance grows with its cores.
package intake // import "github.com/otelcol-red/otelcol-red/internal/intake"

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

	// held is the bytes of the items put and not yet released; maxBytes bounds it (0: no bound).
	held     atomic.Int64
	maxBytes int64

	lostOffers atomic.Uint64
	fullWaits  atomic.Uint64
	bytesWaits atomic.Uint64
}

// Stats are cumulative counters of a Queue.
type Stats struct {
	// LostOffers counts Offer calls that failed under contention while the ring had room
	// and were retried (go-datastructures #213).
	LostOffers uint64
	// FullWaits counts Put calls that found the ring full and had to wait for room.
	FullWaits uint64
	// BytesWaits counts PutSized calls that had to wait because the items held had reached
	// the byte bound (LimitBytes).
	BytesWaits uint64
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

// LimitBytes bounds the bytes of the items put with PutSized and not yet released (Release) to
// maxBytes; 0 means no bound. An item larger than the bound is admitted when nothing else is
// held, so no item waits forever. Call it before the first Put.
func (q *Queue[T]) LimitBytes(maxBytes int64) { q.maxBytes = max(maxBytes, 0) }

// Cap returns the capacity of the ring.
func (q *Queue[T]) Cap() int { return int(q.ring.Cap()) }

// HeldBytes returns the bytes of the items put and not yet released.
func (q *Queue[T]) HeldBytes() int64 { return q.held.Load() }

// Len returns the number of items queued and not yet drained.
func (q *Queue[T]) Len() int { return int(q.queued.Load()) }

// Stats returns the queue's counters.
func (q *Queue[T]) Stats() Stats {
	return Stats{
		LostOffers: q.lostOffers.Load(),
		FullWaits:  q.fullWaits.Load(),
		BytesWaits: q.bytesWaits.Load(),
	}
}

// Put publishes item. When the ring is full it waits for room until ctx is done, and then
// returns ctx.Err() without having queued the item. It never allocates on the fast path.
func (q *Queue[T]) Put(ctx context.Context, item *T) error { return q.PutSized(ctx, item, 0) }

// PutSized is Put for an item of size bytes, counted against LimitBytes' bound until the
// consumer calls Release(size). When the bound would be passed it waits for room like Put on a
// full ring, and on ctx's end returns ctx.Err() with nothing queued and nothing held.
func (q *Queue[T]) PutSized(ctx context.Context, item *T, size int64) error {
	if err := q.hold(ctx, size); err != nil {
		return err
	}
	lost := 0
	for {
		ok, err := q.ring.Offer(item)
		if err != nil {
			q.held.Add(-size)
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
		q.fullWaits.Add(1)
		if err := q.waitForRoom(ctx, q.ringHasRoom); err != nil {
			q.held.Add(-size)
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

// hold adds size to the bytes held, waiting while that would pass the bound and other items
// are held.
func (q *Queue[T]) hold(ctx context.Context, size int64) error {
	if q.maxBytes == 0 || size <= 0 {
		q.held.Add(size)
		return nil
	}
	waited := false
	for {
		// A compare-and-swap, not an add taken back: the bytes held never pass the bound,
		// even for a moment.
		if h := q.held.Load(); h == 0 || h+size <= q.maxBytes {
			if q.held.CompareAndSwap(h, h+size) {
				return nil
			}
			continue
		}
		if !waited {
			q.bytesWaits.Add(1)
			waited = true
		}
		room := func() bool { h := q.held.Load(); return h == 0 || h+size <= q.maxBytes }
		if err := q.waitForRoom(ctx, room); err != nil {
			return err
		}
	}
}

// Release gives back size bytes of an item the consumer has finished with, and wakes the
// producers waiting for room. Consumer only.
func (q *Queue[T]) Release(size int64) {
	if size == 0 {
		return
	}
	q.held.Add(-size)
	q.wakeRoomWaiters()
}

func (q *Queue[T]) ringHasRoom() bool { return q.ring.Len() < q.ring.Cap() }

// waitForRoom waits until room() holds or ctx is done; the consumer wakes it each time it makes
// room (Drain, Release).
func (q *Queue[T]) waitForRoom(ctx context.Context, room func() bool) error {
	q.spaceMu.Lock()
	ch := q.spaceCh
	q.roomWaiters.Add(1)
	q.spaceMu.Unlock()
	defer q.roomWaiters.Add(-1)

	// Registered before this check: a consumer that makes room after it sees roomWaiters > 0
	// and closes ch, so the wakeup cannot be missed.
	if room() {
		return nil
	}
	// Producers are held back, so the consumer's batch is complete whatever it asked for;
	// make sure it is awake.
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
// It appends at most Cap items: into a DrainBuffer, draining never allocates. Consumer only.
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
	if n > 0 {
		q.wakeRoomWaiters()
	}
	return buf
}

// DrainBuffer returns an empty buffer with room for a whole ring. A consumer that drains into a
// buffer grown on demand allocates the first time a drain is larger than every one before,
// which depends on how far the scheduler let the producers run ahead: once in a while, long
// after the warm-up.
func (q *Queue[T]) DrainBuffer() []*T { return make([]*T, 0, q.Cap()) }

// wakeRoomWaiters wakes every producer waiting for room; they look again. It allocates only
// when some wait, which is the slow path.
func (q *Queue[T]) wakeRoomWaiters() {
	if q.roomWaiters.Load() > 0 {
		q.spaceMu.Lock()
		close(q.spaceCh)
		q.spaceCh = make(chan struct{})
		q.spaceMu.Unlock()
	}
}
