// Package pipeline is the stage both trace connectors run on, from ConsumeTraces to the metrics
// handed to the next consumer. Each connector supplies what differs in kind: how a request is
// reduced to a batch, how batches are applied, and how a flush is built; the stage supplies the
// rest, once:
//
//	ConsumeTraces (any number of goroutines)  wire traces decoded (wire.go), Take a pooled batch
//	                                          (refused once shut down), Reduce the request into
//	                                          it, Submit it to the ring
//	the consumer goroutine (run, drain)       sleeps until enough batches are queued, a tick or
//	                                          Shutdown; drains, Applies, and at each flush tick
//	                                          Swaps its buffer for the spare
//	the flush goroutine (flushLoop)           Flushes the buffer handed over, gives it back
//
// No lock is shared between ingest and flush: producers share the ring and the free list
// (internal/intake), the consumer owns the state, the flush goroutine owns the buffer it was
// handed, and the two buffers change hands through channels.
package pipeline // import "github.com/otelcol-red/otelcol-red/internal/pipeline"

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/intake"
	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
)

// Consumer is a connector's part of the consumer goroutine: the one goroutine that owns the
// connector's state, so that none of it needs a lock.
type Consumer[B, F any] interface {
	// Apply folds batch b, taken from the ring, into the state; now is the round's clock
	// reading (unix nanoseconds). The stage recycles b afterwards.
	Apply(b *B, now int64)
	// Applied ends a round that applied n batches (n > 0).
	Applied(n int, now int64)
	// WakeItems is how many queued batches wake the consumer when it sleeps. Waking costs the
	// producer that completes the count a futex call, so it should be rare; every queued batch
	// is alive until applied, so large batches should wake it sooner.
	WakeItems() int
	// Swap ends an interval: spare, the buffer the flush goroutine handed back, becomes the one
	// the consumer fills, and the filled one is returned for Flush. final: Shutdown's, after
	// the last batch.
	Swap(spare F, final bool) F
}

// Flusher is a connector's part of the flush goroutine.
type Flusher[F any] interface {
	// Flush turns a filled buffer into metrics, hands them to the next consumer and empties the
	// buffer for its next interval; it then goes back to the consumer as its spare.
	Flush(full F)
}

// Starter is a Consumer that wants to know when the stage starts (the start time of its first
// interval).
type Starter interface {
	Start(now int64)
}

// Duty is periodic work on the consumer goroutine besides the flush, on a ticker of its own:
// tracegraph expires the halves whose pair did not come, and the idle series.
type Duty struct {
	Every time.Duration
	Run   func(now int64)
}

// maxDuties bounds Settings.Duties: the consumer's select has a case per duty.
const maxDuties = 2

// Settings are what a Stage is built with.
type Settings[B, F any] struct {
	// Pipe is the connector's intake: its ring, free list and gate.
	Pipe *intake.Pipe[B]
	// Reduce adds a request's spans to a batch taken from the pipe. Any number of producers
	// call it at once, each with its own batch: it must not lock or write shared state.
	Reduce func(b *B, td ptrace.Traces)
	// ReduceWire is Reduce for wire traces (package wiretraces): it adds the spans of the
	// request d decoded, as Reduce adds those of the same request unmarshalled by pdata. d is
	// the producer's own until ReduceWire returns.
	ReduceWire func(b *B, d *otlpwire.Decoder)
	// Consumer applies the batches and swaps the buffers; it may implement Starter.
	Consumer Consumer[B, F]
	// Flusher flushes a filled buffer.
	Flusher Flusher[F]
	// Spare is the second buffer; the Consumer fills the first one.
	Spare F
	// Clock drives the flush and housekeeping tickers.
	Clock clockwork.Clock
	// FlushInterval is the time between flushes; 0 flushes after every round that applied
	// batches.
	FlushInterval time.Duration
	// Duties run on the consumer goroutine, in this order when several are due, at most
	// maxDuties of them.
	Duties []Duty
	// ErrShutdown is what ConsumeTraces returns once Shutdown has begun.
	ErrShutdown error
	// Refused counts the spans ConsumeTraces refused: shut down, or the context done while the ring
	// was full.
	Refused *atomic.Int64
	// RefusedRequests counts, by reason, the requests ConsumeTraces refused because their bytes
	// were refused: wire traces whose request the decoder, or pdata, refuses (wire.go). They
	// have no span count.
	RefusedRequests *Refusals
	// Postponed counts the flush ticks that found the flush goroutine still busy with the
	// previous buffer.
	Postponed *atomic.Int64
	// Closed, when not nil, runs once at the end of Shutdown (the connector's own telemetry
	// unregisters there).
	Closed func()
}

// Stage runs one connector's data path (see the package comment). It is the connector as the
// collector sees it (component.Component and consumer.Traces); Start and Shutdown are each
// idempotent.
type Stage[B, F any] struct {
	set Settings[B, F]

	// decoders holds otlpwire.Decoders for the producers' wire traces, one per ConsumeTraces
	// call in flight (wire.go).
	decoders sync.Pool

	// The two buffers change hands through these: toFlush takes the filled one to the flush
	// goroutine, returned brings it back as the spare. Each has room for one, and there is
	// one buffer between them: the one the flush goroutine holds or has handed back.
	toFlush  chan handoff[F]
	returned chan F

	flushTicker             clockwork.Ticker
	dutyTickers             [maxDuties]clockwork.Ticker
	stop, done, flushed     chan struct{}
	startOnce, shutdownOnce sync.Once
	started                 bool

	// Consumer goroutine only.
	drainBuf []*B
	// flushDue: a tick found the flush goroutine busy; swap as soon as it hands its buffer
	// back. dutyDue: a duty's tick was taken by the select.
	flushDue bool
	dutyDue  [maxDuties]bool
}

type handoff[F any] struct {
	buf   F
	final bool
}

// New returns a stage; nothing runs until Start.
func New[B, F any](set Settings[B, F]) *Stage[B, F] {
	s := &Stage[B, F]{
		set:      set,
		toFlush:  make(chan handoff[F], 1),
		returned: make(chan F, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		flushed:  make(chan struct{}),
		drainBuf: set.Pipe.Queue.DrainBuffer(),
	}
	s.decoders.New = newDecoder
	if s.set.RefusedRequests == nil { // a connector that does not report them still counts them
		s.set.RefusedRequests = new(Refusals)
	}
	s.returned <- set.Spare
	if len(set.Duties) > maxDuties {
		panic("BUG: pipeline: more duties than the consumer's select has cases for")
	}
	return s
}

var _ consumer.Traces = (*Stage[int, int])(nil)

// ConsumeTraces reduces td to one batch and queues it for the consumer: Take, Reduce (or
// ReduceWire, for wire traces), Submit. It holds no lock and, once the batch pool is warm,
// allocates nothing. When the ring is full it waits for room until ctx is done, and then
// returns the context's error with nothing taken. Wire traces whose request is refused are a
// permanent error, counted in RefusedRequests (wire.go).
func (s *Stage[B, F]) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	d, h, td, err := s.decode(ctx, td)
	if err != nil {
		return err
	}
	b, ok := s.set.Pipe.Take()
	if !ok {
		s.set.Refused.Add(s.spans(d, td))
		s.release(d, h)
		return s.set.ErrShutdown
	}
	if d != nil {
		s.set.ReduceWire(b, d)
	} else {
		s.set.Reduce(b, td)
	}
	// The span count of wire traces is the decoder's: read it before the decoder goes back.
	spans := int64(-1)
	if d != nil {
		spans = int64(d.NumSpans())
	}
	s.release(d, h)
	if err := s.set.Pipe.Submit(ctx, b); err != nil {
		if spans < 0 {
			spans = int64(td.SpanCount())
		}
		s.set.Refused.Add(spans)
		return err
	}
	return nil
}

// Capabilities implements consumer.Traces: the request is read, never changed.
func (*Stage[B, F]) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// Start starts the consumer and the flush goroutines.
func (s *Stage[B, F]) Start(context.Context, component.Host) error {
	s.startOnce.Do(func() {
		if s.set.FlushInterval > 0 {
			s.flushTicker = s.set.Clock.NewTicker(s.set.FlushInterval)
		}
		for i, d := range s.set.Duties {
			s.dutyTickers[i] = s.set.Clock.NewTicker(d.Every)
		}
		if st, ok := s.set.Consumer.(Starter); ok {
			st.Start(s.set.Clock.Now().UnixNano())
		}
		s.started = true
		go s.run()
		go s.flushLoop()
	})
	return nil
}

// Shutdown refuses new requests, waits for the ConsumeTraces calls in flight, then lets the
// consumer drain the ring and flush a last time, and waits until the flush goroutine has
// handed that flush to the next consumer, or until ctx is done (its error is returned then).
func (s *Stage[B, F]) Shutdown(ctx context.Context) error {
	var err error
	s.shutdownOnce.Do(func() {
		err = s.shutdown(ctx)
		if s.set.Closed != nil {
			s.set.Closed()
		}
	})
	return err
}

func (s *Stage[B, F]) shutdown(ctx context.Context) error {
	err := s.set.Pipe.Close(ctx)
	if !s.started {
		return err
	}
	close(s.stop)
	if werr := intake.Await(ctx, s.done, s.flushed); werr != nil {
		return errors.Join(err, werr)
	}
	for _, t := range append([]clockwork.Ticker{s.flushTicker}, s.dutyTickers[:]...) {
		if t != nil {
			t.Stop()
		}
	}
	return err
}

// Idle reports whether the flush goroutine has handed its buffer back, so that a flush tick
// now would swap at once rather than wait for it.
func (s *Stage[B, F]) Idle() bool { return len(s.returned) == 1 }

// run is the consumer goroutine: sleep until WakeItems batches are queued, a tick, or Shutdown;
// drain; repeat. The tickers are part of the same select, so a quiet period still flushes on
// time and batches never wait longer than one interval; under load drain watches them itself.
func (s *Stage[B, F]) run() {
	defer close(s.done)
	q := s.set.Pipe.Queue
	flushC, duty0, duty1 := chanOf(s.flushTicker), chanOf(s.dutyTickers[0]), chanOf(s.dutyTickers[1])
	for {
		if !q.Arm(s.set.Consumer.WakeItems()) {
			// back is nil, so never ready, unless a flush waits for the spare.
			var back chan F
			if s.flushDue {
				back = s.returned
			}
			select {
			case <-q.Wake():
			case spare := <-back:
				q.Disarm()
				s.drain(false)
				s.swap(spare, false)
				continue
			case <-flushC:
				// The first round drained from here comes after the tick: its flush follows
				// it, whatever the load (drain).
				q.Disarm()
				s.drain(true)
				continue
			case <-duty0:
				s.dutyDue[0] = true
			case <-duty1:
				s.dutyDue[1] = true
			case <-s.stop:
				q.Disarm()
				s.drain(false)
				s.flush(true)
				return
			}
		}
		q.Disarm()
		s.drain(false)
	}
}

// flushCheckBatches is how many batches the consumer applies between two looks at the flush
// ticker while it works through a drained round.
const flushCheckBatches = 16

// drain applies the queued batches, round after round, while rounds fill up to WakeItems or a
// flush waits for the next round.
//
// The rule that makes a flush exact: a flush waits for the first round drained after its tick
// was seen, which holds every batch queued before it, so every span whose ConsumeTraces returned
// before the tick is in that flush. Under sustained overload run's select is never reached
// again (every round finds WakeItems batches, and when one does not Arm finds the next one
// queued), so the tick is looked at before every round and every flushCheckBatches batches: a
// full ring takes long to apply when the consumer gets a small share of the CPU (many busy
// receivers on few cores), and the flush is late by at most one round, one ring of batches,
// whatever the load. tick: run's select took a tick, so the first round already comes after
// it.
func (s *Stage[B, F]) drain(tick bool) {
	q := s.set.Pipe.Queue
	flushC := chanOf(s.flushTicker)
	for {
		if !tick {
			tick = fired(flushC)
		}
		afterTick := tick // this round's Drain comes after the tick
		s.drainBuf = q.Drain(s.drainBuf[:0])
		if len(s.drainBuf) == 0 {
			s.runDuties()
			s.flushOrSwap(tick)
			return
		}
		now := s.set.Clock.Now().UnixNano()
		for i, b := range s.drainBuf {
			if !tick && i%flushCheckBatches == flushCheckBatches-1 {
				tick = fired(flushC)
			}
			s.set.Consumer.Apply(b, now)
			s.set.Pipe.Recycle(b)
			s.drainBuf[i] = nil
		}
		s.set.Consumer.Applied(len(s.drainBuf), now)
		s.runDuties()
		// Without an interval every round that applied batches is flushed.
		s.flushOrSwap(afterTick || s.set.FlushInterval <= 0)
		if afterTick {
			tick = false
		}
		if len(s.drainBuf) < s.set.Consumer.WakeItems() && !tick {
			return
		}
	}
}

// runDuties runs the duties whose tick came, in the select or since, in order.
func (s *Stage[B, F]) runDuties() {
	now := int64(0)
	for i, d := range s.set.Duties {
		if !s.dutyDue[i] && !fired(chanOf(s.dutyTickers[i])) {
			continue
		}
		s.dutyDue[i] = false
		if now == 0 {
			now = s.set.Clock.Now().UnixNano()
		}
		d.Run(now)
	}
}

// flush swaps the buffers and hands the filled one to the flush goroutine. When that one is
// still busy with the previous interval (a slow next consumer, or a flush goroutine starved of
// CPU), the swap is postponed and the buffer keeps filling: it happens as soon as the flush
// goroutine hands its buffer back (flushDue), nothing is lost and ingest never waits. The final
// flush does wait.
func (s *Stage[B, F]) flush(final bool) {
	var spare F
	if final {
		spare = <-s.returned
	} else {
		select {
		case spare = <-s.returned:
		default:
			s.set.Postponed.Add(1)
			s.flushDue = true
			return
		}
	}
	s.swap(spare, final)
}

// flushOrSwap flushes when a tick was seen (due), else completes a postponed flush if the
// spare came back meanwhile.
func (s *Stage[B, F]) flushOrSwap(due bool) {
	if due {
		s.flush(false)
		return
	}
	if s.flushDue {
		select {
		case spare := <-s.returned:
			s.swap(spare, false)
		default:
		}
	}
}

func (s *Stage[B, F]) swap(spare F, final bool) {
	s.flushDue = false
	s.toFlush <- handoff[F]{buf: s.set.Consumer.Swap(spare, final), final: final}
}

// flushLoop is the flush goroutine: it flushes each buffer handed over and hands it back, until
// the final one.
func (s *Stage[B, F]) flushLoop() {
	defer close(s.flushed)
	for h := range s.toFlush {
		s.set.Flusher.Flush(h.buf)
		if h.final {
			return
		}
		s.returned <- h.buf
	}
}

// chanOf is t's channel; nil (never ready in a select) without a ticker.
func chanOf(t clockwork.Ticker) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.Chan()
}

// fired reports whether c has a tick waiting, without blocking (a nil c never has).
func fired(c <-chan time.Time) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
