package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

// noValue is the id of an absent dimension or peer value.
const noValue = ^uint32(0)

// stringIDs gives every distinct string of the pending edges and the series a uint32 id, so
// that both tables hold fixed-size records without pointers and compare keys as integers.
// Owned by the aggregator goroutine; a flush reads a copy of the strings (snapshot.go). Id 0 is
// "", which servicegraph treats as "no service".
//
// Strings nobody refers to any more are found by mark and sweep (sweep, at each cache_loop):
// reference counts would cost a write per half edge for an event that happens once a minute.
type stringIDs struct {
	idOf  map[string]uint32
	strs  []string
	free  []uint32
	marks []bool
}

func newStringIDs() *stringIDs {
	return &stringIDs{idOf: map[string]uint32{"": 0}, strs: []string{""}}
}

// of returns the id of t's bytes in b, noValue when t is absent. A string seen before costs a
// map lookup without allocating.
func (in *stringIDs) of(b *halfBatch, t text) uint32 {
	if t.n == absent {
		return noValue
	}
	return in.id(b.arena[t.off : t.off+t.n])
}

func (in *stringIDs) id(s []byte) uint32 {
	if id, ok := in.idOf[string(s)]; ok {
		return id
	}
	return in.add(string(s))
}

// idString is id for a string the caller already has.
func (in *stringIDs) idString(s string) uint32 {
	if id, ok := in.idOf[s]; ok {
		return id
	}
	return in.add(s)
}

func (in *stringIDs) add(s string) uint32 {
	var id uint32
	if n := len(in.free); n > 0 {
		id = in.free[n-1]
		in.free = in.free[:n-1]
		in.strs[id] = s
	} else {
		id = uint32(len(in.strs))
		in.strs = append(in.strs, s)
	}
	in.idOf[s] = id
	return id
}

func (in *stringIDs) str(id uint32) string { return in.strs[id] }

func (in *stringIDs) len() int { return len(in.idOf) }

// mark keeps id through the next sweep.
func (in *stringIDs) mark(id uint32) {
	if id != noValue {
		in.marks[id] = true
	}
}

// startMark clears the marks before the tables mark what they refer to.
func (in *stringIDs) startMark() {
	in.marks = append(in.marks[:0], make([]bool, len(in.strs))...)
	in.marks[0] = true
}

// sweep forgets every string not marked since startMark; keep are marked too (the constants
// the aggregator holds, "user" and "unknown").
func (in *stringIDs) sweep(keep ...uint32) {
	for _, id := range keep {
		in.mark(id)
	}
	for id, s := range in.strs {
		if in.marks[id] || s == "" && id != 0 {
			continue
		}
		if cur, ok := in.idOf[s]; ok && cur == uint32(id) {
			delete(in.idOf, s)
			in.strs[id] = ""
			in.free = append(in.free, uint32(id))
		}
	}
}
