package aggregate // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/aggregate"

// refusedTable counts, exactly, the spans of the series the caps refuse, by their identity
// hash: one table per family, for every scope of the family (each service at its
// max_series_per_service, the family at max_series). cap_selection by traffic reads it twice:
// while an interval fills, a refused series whose spans reach minPromote is let in at once if
// its scope holds an idle series (victims.go); at each swap, the series that
// received the most spans in the interval are matched with the lightest series of their
// scope (rerank).
//
// Each entry keeps two counts: count, the spans of the current interval (what rerank ranks
// by), and chain, the spans since the series was first seen, while no gap between two of
// its spans was longer than the window (four flush intervals): a series that sends a span
// every few seconds builds a chain across intervals, an ID seen once never gets past 1.
//
// Memory is bounded in bytes (cap_selection.memory_mib, for all families together): a table
// starts at minRefusedSlots and doubles while more than half full and the budget allows. A
// table that cannot grow makes room in the newcomer's probe run: it replaces the entry with
// the shortest chain there, the oldest first, if that chain is no longer than the
// newcomer's weight, so IDs seen once push each other out while series that keep coming
// stay counted. Up to the budget (16 MiB by default: a table of 262,144 slots, 10 MiB, the
// largest power of two that fits; ~196,000 series at 3/4 load) every refused series is counted
// exactly; the README has the figures.
//
// Open addressing with linear probing, an empty slot marked by chain 0, backward-shift
// deletion (no tombstones), no pointers for the garbage collector to scan.
type refusedTable struct {
	slots  []refusedEntry
	n      int
	shift  uint8 // a hash's home slot: (hash × Fibonacci constant) >> shift
	budget *refusedBudget
}

// refusedEntry is one refused series. 40 bytes.
type refusedEntry struct {
	hash  uint64
	first int64  // batch time of the chain's first span
	last  int64  // batch time of the latest span
	chain uint32 // spans since first; 0 marks an empty slot
	count uint32 // spans in the current interval
	scope uint32 // the service id, with globalScopeBit when max_series refused the series
}

// globalScopeBit marks, in refusedEntry.scope, a series max_series refused (its service had
// room under max_series_per_service).
const globalScopeBit = 1 << 31

const (
	refusedEntryBytes = 40
	// minRefusedSlots is a table's first size, allocated when its family first refuses a
	// series: 40 KiB.
	minRefusedSlots = 1024
	// refusedProbe bounds the slots a table that cannot grow searches for an entry to replace.
	refusedProbe = 16
)

// refusedBudget is the bytes the refused tables of a connector may take together.
type refusedBudget struct {
	limit, used int
}

// sight counts w spans at ts of the refused series hashing to h, of scope, and returns its
// entry; nil when the table is full and every entry of its probe run is heavier than w (the
// spans are not counted). window is the longest gap a chain bridges.
func (t *refusedTable) sight(h uint64, w uint32, ts, window int64, scope uint32) *refusedEntry {
	if t.slots == nil {
		if !t.resize(minRefusedSlots) {
			return nil
		}
	}
	mask := uint64(len(t.slots) - 1)
	i := t.home(h)
	for probed := 0; ; probed++ {
		e := &t.slots[i]
		if e.chain == 0 {
			break
		}
		if e.hash == h {
			if ts-e.last > window {
				e.first, e.chain = ts, 0
			}
			e.chain = satAdd(e.chain, w)
			e.count = satAdd(e.count, w)
			e.last = max(e.last, ts)
			e.scope = scope
			return e
		}
		i = (i + 1) & mask
	}
	if 2*(t.n+1) > len(t.slots) && t.resize(2*len(t.slots)) {
		return t.sight(h, w, ts, window, scope)
	}
	// i is the empty slot that ends h's probe run. A table the budget keeps from growing
	// fills up to 3/4 (runs stay short), then makes room.
	if 4*(t.n+1) > 3*len(t.slots) {
		// Full: replace the lightest entry of the run, if it is no heavier.
		j, ok := t.lightest(h, w)
		if !ok {
			return nil
		}
		t.slots[j] = refusedEntry{hash: h, first: ts, last: ts, chain: w, count: w, scope: scope}
		return &t.slots[j]
	}
	t.slots[i] = refusedEntry{hash: h, first: ts, last: ts, chain: w, count: w, scope: scope}
	t.n++
	return &t.slots[i]
}

// lightest returns the slot of the entry with the shortest chain (the oldest of equals) among
// the first refusedProbe of h's probe run, if its chain is at most w. Replacing it in place
// keeps h reachable from its home: the slot lies on h's run.
func (t *refusedTable) lightest(h uint64, w uint32) (int, bool) {
	mask := uint64(len(t.slots) - 1)
	best, found := 0, false
	i := t.home(h)
	for range refusedProbe {
		e := &t.slots[i]
		if e.chain == 0 {
			break
		}
		if e.chain <= w && (!found || e.chain < t.slots[best].chain ||
			e.chain == t.slots[best].chain && e.last < t.slots[best].last) {
			best, found = int(i), true
		}
		i = (i + 1) & mask
	}
	return best, found
}

// remove forgets the series hashing to h, if the table holds it: it has its own series now.
func (t *refusedTable) remove(h uint64) {
	if t.n == 0 {
		return
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.home(h); t.slots[i].chain != 0; i = (i + 1) & mask {
		if t.slots[i].hash == h {
			t.deleteAt(i)
			return
		}
	}
}

// deleteAt empties slot i with backward-shift deletion: the entries after it in its probe run
// move back, so lookups never need tombstones.
func (t *refusedTable) deleteAt(i uint64) {
	mask := uint64(len(t.slots) - 1)
	for j := (i + 1) & mask; t.slots[j].chain != 0; j = (j + 1) & mask {
		home := t.home(t.slots[j].hash)
		// The entry at j may move to the hole at i unless its home lies cyclically in (i, j].
		if (j-home)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = refusedEntry{}
	t.n--
}

// sweep ends an interval at now: it calls visit with every entry that received spans in the
// interval (before its count is cleared), drops the entries whose latest span is older than
// window, and gives memory back when the table is mostly empty.
func (t *refusedTable) sweep(now, window int64, visit func(e *refusedEntry)) {
	if t.n == 0 {
		if len(t.slots) > minRefusedSlots {
			t.resize(0)
		}
		return
	}
	mask := uint64(len(t.slots) - 1)
	// Start after an empty slot: a run never crosses one, so the entries that backward-shift
	// deletion moves only move back within runs not yet visited, and none is visited twice.
	start := uint64(0)
	for t.slots[start].chain != 0 {
		start++
	}
	for p := 0; p < len(t.slots); {
		i := (start + 1 + uint64(p)) & mask
		e := &t.slots[i]
		if e.chain == 0 {
			p++
			continue
		}
		if e.count > 0 {
			visit(e)
			e.count = 0
		}
		if now-e.last > window {
			t.deleteAt(i) // the slot may now hold a later entry of the run: look at it again
			continue
		}
		p++
	}
	if len(t.slots) > minRefusedSlots && 8*t.n < len(t.slots) {
		t.resize(len(t.slots) / 2)
	}
}

// resize moves the entries to a table of size slots (a power of two; 0 frees it), if the
// budget allows; it reports whether it did.
func (t *refusedTable) resize(size int) bool {
	grow := (size - len(t.slots)) * refusedEntryBytes
	if grow > 0 && t.budget.used+grow > t.budget.limit {
		return false
	}
	old := t.slots
	t.budget.used += grow
	if size == 0 {
		t.slots, t.n = nil, 0
		return true
	}
	t.slots, t.n = make([]refusedEntry, size), 0
	t.shift = uint8(64 - bitsOf(size))
	mask := uint64(size - 1)
	for k := range old {
		if old[k].chain == 0 {
			continue
		}
		i := t.home(old[k].hash)
		for t.slots[i].chain != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = old[k]
		t.n++
	}
	return true
}

func (t *refusedTable) home(h uint64) uint64 { return (h * 0x9e3779b97f4a7c15) >> t.shift }

// bitsOf returns log2 of n, a power of two.
func bitsOf(n int) int {
	b := 0
	for 1<<b < n {
		b++
	}
	return b
}

func satAdd(a, b uint32) uint32 {
	if s := a + b; s >= a {
		return s
	}
	return ^uint32(0)
}
