package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// pacerSweepEvery bounds how often the pacer forgets the clients whose turn
// has passed: often enough that a stream of new addresses cannot grow the
// map for long, rarely enough that the sweep costs nothing per scrape.
const pacerSweepEvery = time.Second

// pacerMaxAhead is how many turns of one address may be taken ahead of
// the current one. Scrapes beyond it are refused at once rather than
// queued: a client opening many requests together would otherwise hold a
// goroutine and a connection per request and push its address's turns, and
// those of every client sharing the address, ever further out.
const pacerMaxAhead = 4

// pacer spaces the bodies sent to one client address at least
// min_scrape_interval apart. Serving a cached body costs the collector little
// but the kernel's send of it, a cost in proportion to the series; a client
// that asks again as soon as it has its answer pays it many times a second
// out of the CPU ingest runs on. Prometheus asks a target once per
// scrape_interval, never more often than the interval allows, so it does not
// wait here; a client in a loop waits out the rest of the interval and then
// gets the current snapshot, the same answer it would have had later.
type pacer struct {
	interval time.Duration
	clock    clockwork.Clock

	mu sync.Mutex
	// next is, per client address, the earliest time its next scrape may
	// be served. Scrapes of one address that arrive together take turns.
	next  map[netip.Addr]time.Time
	swept time.Time
}

func newPacer(interval time.Duration, clock clockwork.Clock) *pacer {
	return &pacer{interval: interval, clock: clock, next: map[netip.Addr]time.Time{}}
}

// reserve takes the next turn of addr and returns how long until it comes.
// It reports false, taking no turn, when pacerMaxAhead turns are already
// taken; the wait is then until the last of them.
func (p *pacer) reserve(addr netip.Addr) (time.Duration, bool) {
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	at := now
	if n, ok := p.next[addr]; ok && n.After(now) {
		at = n
	}
	if at.Sub(now) >= pacerMaxAhead*p.interval {
		return at.Sub(now), false
	}
	p.next[addr] = at.Add(p.interval)
	if now.Sub(p.swept) >= pacerSweepEvery {
		p.swept = now
		for a, n := range p.next {
			if !n.After(now) {
				delete(p.next, a)
			}
		}
	}
	return at.Sub(now), true
}

// clientAddr is the address a scrape is paced by: the peer's IP, without
// the port, since a client in a loop may open a connection per scrape.
// Behind a proxy every client has the proxy's address. A peer address that
// does not parse (a unix socket) is the zero address, shared by all such
// peers.
func clientAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}
