package hotspotfilter // import "github.com/otelcol-red/otelcol-red/connector/hotspotfilter"

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
)

// outcome is what happened to one span; it indexes serviceEntry.counts.
type outcome int

const (
	keptBudget    outcome = iota // within the service's budget
	keptError                    // error status, rule has keep_errors
	keptSlow                     // lasted at least slow_threshold
	keptParent                   // another span of the same batch is its child
	keptSampled                  // over budget, kept by sample_excess
	keptUnmatched                // no rule selected it
	dropped                      // over budget
	numOutcomes
)

// reason is the hotspotfilter.reason attribute value of each kept outcome.
var reason = [numOutcomes]string{
	keptBudget:    "budget",
	keptError:     "error",
	keptSlow:      "slow",
	keptParent:    "parent",
	keptSampled:   "sampled",
	keptUnmatched: "unmatched",
}

// serviceEntry is the state of one service under one rule: its budget and
// its counters. Everything the data path touches is atomic, so producers
// never take a lock once they hold the entry.
type serviceEntry struct {
	// tat is the GCRA "theoretical arrival time" in nanoseconds since the
	// filter's epoch. A token bucket needs two fields updated together (tokens
	// and last refill), hence a lock; GCRA folds both into one number that a
	// compare-and-swap updates.
	tat    atomic.Int64
	excess atomic.Int64 // spans over budget so far, for sample_excess
	hot    atomic.Bool  // went over budget since the last flush
	counts [numOutcomes]atomic.Int64

	service  string
	overflow bool  // shared by the services beyond max_services
	start    int64 // creation, Unix nanoseconds: the cumulative start time
	lastSeen int64 // nanoseconds since the epoch; guarded by the shard lock
}

// take spends one unit of budget at now (nanoseconds since the epoch) and
// reports whether there was one.
func (e *serviceEntry) take(now, interval, tolerance int64) bool {
	if interval <= 0 {
		return false
	}
	for {
		tat := e.tat.Load()
		base := max(tat, now)
		if base-now > tolerance {
			return false
		}
		if e.tat.CompareAndSwap(tat, base+interval) {
			return true
		}
	}
}

// tableShards splits a serviceTable so that producers looking up different
// services rarely meet on a lock; a power of two so a mask picks the shard.
const tableShards = 64

// serviceTable maps service names to entries for one rule. Lookups take one
// shard's lock for a map access only; the size cap is an atomic so that it is
// exact without a table-wide lock.
type serviceTable struct {
	seed     maphash.Seed
	max      int64
	size     atomic.Int64
	overflow *serviceEntry
	shards   [tableShards]tableShard
}

type tableShard struct {
	mu sync.Mutex
	m  map[string]*serviceEntry
	_  [64 - 8 - 8]byte // keep neighbouring shard locks on separate cache lines
}

func newServiceTable(maxServices int, unixStart int64) *serviceTable {
	t := &serviceTable{
		seed:     maphash.MakeSeed(),
		max:      int64(maxServices),
		overflow: &serviceEntry{overflow: true, start: unixStart},
	}
	for i := range t.shards {
		t.shards[i].m = make(map[string]*serviceEntry)
	}
	return t
}

// get returns the entry of service, creating it if the table has room and
// returning the shared overflow entry if not. now is nanoseconds since the
// epoch, unixNow the same instant as Unix nanoseconds.
func (t *serviceTable) get(service string, now, unixNow int64) *serviceEntry {
	sh := &t.shards[maphash.String(t.seed, service)&(tableShards-1)]
	sh.mu.Lock()
	e := sh.m[service]
	if e == nil {
		// Reserve a place first so that concurrent creations in different
		// shards can never take the table past max.
		if t.size.Add(1) > t.max {
			t.size.Add(-1)
			sh.mu.Unlock()
			return t.overflow
		}
		// Clone: service points into the batch, which must not be retained.
		e = &serviceEntry{service: strings.Clone(service), start: unixNow}
		sh.m[e.service] = e
	}
	e.lastSeen = now
	sh.mu.Unlock()
	return e
}

// collect appends every entry to dst, the overflow entry last, and removes
// the entries last seen before expireBefore (nanoseconds since the epoch; 0
// removes nothing). Removed entries are still returned, so their final counts
// are emitted once. Entries are copied out under the shard lock and read
// after it, so a flush holds each lock for a map walk only.
func (t *serviceTable) collect(dst []*serviceEntry, expireBefore int64) []*serviceEntry {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		for name, e := range sh.m {
			dst = append(dst, e)
			if e.lastSeen < expireBefore {
				delete(sh.m, name)
				t.size.Add(-1)
			}
		}
		sh.mu.Unlock()
	}
	return append(dst, t.overflow)
}
