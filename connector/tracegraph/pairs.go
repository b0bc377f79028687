package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-red/otelcol-red/internal/hash"
)

// edge is a call between two services as it is assembled from its halves: waiting in the pair
// table, or complete and about to be recorded. Fixed size, no pointers: its strings are
// interned ids, its dimensions live beside it (pairTable.dims).
type edge struct {
	trace   pcommon.TraceID
	span    pcommon.SpanID // the client span's ID, which is the server span's parent ID
	hash    uint64
	expires int64 // unix ns
	// prev and next link the waiting edges in arrival order (oldest first); -1 ends the list.
	prev, next int32

	client, server uint32 // interned service names; 0 ("") until that half arrived
	peer           uint32 // the client's peer attribute value, noValue without one
	// The one-byte fields fill the padding before the floats (TestWaitingEdgeSize).
	conn   connection
	failed bool
	late   bool // a half ended outside late_spans' slack
	label  virtualLabel
	// linked: a CONSUMER span's half waiting for the PRODUCER span it links to; several may wait
	// for one producer (a message read by several consumers).
	linked bool
	// kept: a client half already paired through a link, kept until its ttl for the other
	// consumers of the message; it then expires without being recorded.
	kept bool
	// clientStored and serverStored: the span of that side may be named by an exemplar
	// (plan.stored).
	clientStored, serverStored bool

	clientLatency float64
	serverLatency float64
	// weight is the larger adjusted count of the two halves: under consistent sampling both
	// spans were kept with the probability of the less likely one.
	weight float64
	// The server span's own IDs (the client's are the key), for exemplars.
	serverTrace pcommon.TraceID
	serverSpan  pcommon.SpanID
	// clientEnd and serverStart (unix ns) give the messaging latency.
	clientEnd, serverStart uint64
}

// virtualLabel is the virtual_node label of an edge.
type virtualLabel uint8

const (
	labelNone virtualLabel = iota
	labelClient
	labelServer
)

var virtualLabelNames = [...]string{labelNone: "", labelClient: "client", labelServer: "server"}

// complete reports whether both services are known, servicegraph's rule.
func (e *edge) complete() bool { return e.client != 0 && e.server != 0 }

// pairTable holds the edges waiting for their other half, keyed by trace ID and the client's
// span ID, bounded in number (store.max_items) and age (store.ttl). Owned by the aggregator.
//
// A waiting edge costs its record (TestWaitingEdgeSize), 8 bytes per configured dimension (two
// ids) and an 8-byte index slot at a load of 3/4 or less; README.md ("The store") has the
// measured total.
type pairTable struct {
	index   hash.Index
	edges   []edge
	dims    []uint32 // per edge: the client's dimension ids, then the server's
	nd      int      // ids per edge in dims: 2 × len(dimensions)
	free    []int32
	n       int
	oldest  int32
	newest  int32
	keyBuf  [24]byte
	keyHash func([]byte) uint64
	// linked counts the linked consumers' halves waiting: none, and a client half need not
	// look for them.
	linked int
}

func newPairTable(dims int) *pairTable {
	return &pairTable{nd: 2 * dims, oldest: -1, newest: -1, keyHash: hash.Sum64}
}

// hashOf returns the hash of a pair's key.
func (t *pairTable) hashOf(trace pcommon.TraceID, span pcommon.SpanID) uint64 {
	copy(t.keyBuf[:16], trace[:])
	copy(t.keyBuf[16:], span[:])
	return t.keyHash(t.keyBuf[:])
}

// find returns the id of the waiting edge of (trace, span) that is, or is not, a linked
// consumer's half; -1 if none. There is at most one waiting edge of a key that is not linked.
func (t *pairTable) find(h uint64, trace pcommon.TraceID, span pcommon.SpanID, linked bool) int32 {
	p := t.index.Probe(h)
	for id, ok := p.Next(); ok; id, ok = p.Next() {
		if e := &t.edges[id]; e.trace == trace && e.span == span && e.linked == linked {
			return int32(id)
		}
	}
	return -1
}

// dimsOf returns the dimension ids of edge id.
func (t *pairTable) dimsOf(id int32) []uint32 {
	return t.dims[int(id)*t.nd : int(id+1)*t.nd]
}

// insert stores e (with its dimension ids) as the newest waiting edge.
func (t *pairTable) insert(e *edge, dims []uint32) int32 {
	var id int32
	if n := len(t.free); n > 0 {
		id = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		id = int32(len(t.edges))
		t.edges = append(t.edges, edge{})
		t.dims = append(t.dims, make([]uint32, t.nd)...)
	}
	t.edges[id] = *e
	copy(t.dimsOf(id), dims)
	ne := &t.edges[id]
	ne.prev, ne.next = t.newest, -1
	if t.newest >= 0 {
		t.edges[t.newest].next = id
	} else {
		t.oldest = id
	}
	t.newest = id
	t.index.Insert(e.hash, uint32(id))
	t.n++
	if e.linked {
		t.linked++
	}
	return id
}

// remove forgets edge id.
func (t *pairTable) remove(id int32) {
	e := &t.edges[id]
	if e.prev >= 0 {
		t.edges[e.prev].next = e.next
	} else {
		t.oldest = e.next
	}
	if e.next >= 0 {
		t.edges[e.next].prev = e.prev
	} else {
		t.newest = e.prev
	}
	t.index.Delete(e.hash, uint32(id))
	t.free = append(t.free, id)
	t.n--
	if e.linked {
		t.linked--
	}
}

// markStrings marks every string a waiting edge refers to.
func (t *pairTable) markStrings(ids *stringIDs) {
	for id := t.oldest; id >= 0; id = t.edges[id].next {
		e := &t.edges[id]
		ids.mark(e.client)
		ids.mark(e.server)
		ids.mark(e.peer)
		for _, d := range t.dimsOf(id) {
			ids.mark(d)
		}
	}
}
