package harness

import (
	"context"
	"log"
	"sync"
	"sync/atomic"
	"time"
)

// Generator drives one Sink with the pool's requests, either paced at a target rate or as fast as
// the sink acknowledges (closed loop). Only acknowledged spans count as sent, so the number it
// reports is what the collector must have counted.
type Generator struct {
	pool        *Pool
	sink        Sink
	rate        int // spans/s; 0 sends as fast as acknowledged
	concurrency int

	next     atomic.Uint64
	acked    atomic.Int64
	edges    atomic.Int64
	failures atomic.Int64
	missed   atomic.Int64
}

// NewGenerator returns a generator for rate spans/s (0 = max) with concurrency requests in flight.
func NewGenerator(pool *Pool, sink Sink, rate, concurrency int) *Generator {
	if concurrency < 1 {
		concurrency = 1
	}
	return &Generator{pool: pool, sink: sink, rate: rate, concurrency: concurrency}
}

// Acked is the number of spans the sink acknowledged so far.
func (g *Generator) Acked() int64 { return g.acked.Load() }

// Edges is the number of service graph edges (CLIENT spans, Pool.Edges) in the acknowledged
// requests; 0 for a pool without Edges.
func (g *Generator) Edges() int64 { return g.edges.Load() }

// Failures is the number of send attempts that failed and were retried.
func (g *Generator) Failures() int64 { return g.failures.Load() }

// Missed is the number of paced requests that were due while every worker was still busy: a
// collector that cannot keep up shows here and in a sustained rate below the target.
func (g *Generator) Missed() int64 { return g.missed.Load() }

// sendTimeout bounds one request. It is long on purpose: a request abandoned while the collector
// may still process it would make "sent" and "counted" disagree for no fault of the collector.
const sendTimeout = time.Minute

// retryBackoff spaces retries of a refused request (memory limiter, broker unavailable).
const retryBackoff = 50 * time.Millisecond

// pacerSlack is how far behind schedule the paced load may fall before requests count as missed:
// a quarter second of requests absorbs the pacer itself being descheduled on a busy machine, while
// a collector that stays behind still fills it and shows a rate below the target.
const pacerSlack = 250 * time.Millisecond

// Run sends until stop is closed, then waits for requests in flight to be acknowledged.
func (g *Generator) Run(stop <-chan struct{}) {
	slack := int(float64(g.rate) / float64(g.pool.SpansPerRequest) * pacerSlack.Seconds())
	tokens := make(chan struct{}, max(g.concurrency, slack))
	var workers sync.WaitGroup
	for range g.concurrency {
		workers.Add(1)
		go func() {
			defer workers.Done()
			g.work(tokens, stop)
		}()
	}
	if g.rate > 0 {
		g.pace(tokens, stop)
		close(tokens)
	}
	workers.Wait()
}

// pace issues a token per request as it falls due. A token that finds the slack already full is
// counted as missed instead of queued, so that a slow collector is not credited later with a burst.
func (g *Generator) pace(tokens chan<- struct{}, stop <-chan struct{}) {
	perRequest := float64(g.pool.SpansPerRequest)
	start := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var issued int64
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			due := int64(now.Sub(start).Seconds() * float64(g.rate) / perRequest)
			for ; issued < due; issued++ {
				select {
				case tokens <- struct{}{}:
				default:
					g.missed.Add(1)
				}
			}
		}
	}
}

func (g *Generator) work(tokens <-chan struct{}, stop <-chan struct{}) {
	for {
		if g.rate > 0 {
			if _, ok := <-tokens; !ok {
				return
			}
		}
		// A token left in the buffer at stop is not sent: the load window is over.
		select {
		case <-stop:
			return
		default:
		}
		i := int((g.next.Add(1) - 1) % uint64(len(g.pool.Encoded)))
		g.sendOne(i, stop)
	}
}

// sendOne retries a refused request until it is taken. After stop it gives up only on a request
// that was never taken, which keeps "acknowledged" exact.
func (g *Generator) sendOne(i int, stop <-chan struct{}) {
	var lastErr string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		err := g.sink.Send(ctx, i)
		cancel()
		if err == nil {
			g.acked.Add(int64(g.pool.SpansOf(i)))
			if g.pool.Edges != nil {
				g.edges.Add(int64(g.pool.Edges[i]))
			}
			return
		}
		g.failures.Add(1)
		if msg := err.Error(); msg != lastErr {
			log.Printf("send failed (will retry): %v", err)
			lastErr = msg
		}
		select {
		case <-stop:
			return
		case <-time.After(retryBackoff):
		}
	}
}
