package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"encoding/binary"
	"math"

	"github.com/lightstep/go-expohisto/structure"

	"github.com/otelcol-red/otelcol-red/internal/hash"
)

// Positions in a series key. The key is servicegraph's metric key (client, server,
// connection_type, failed, dimensions) plus the virtual_node label, as interned ids.
const (
	keyClient = iota
	keyServer
	keyConn
	keyFailed
	keyLabel
	keyDims
)

// series is the cumulative state of one edge series.
type series struct {
	hash    uint64
	live    bool
	lastAt  int64   // unix ns of the last request recorded
	count   uint64  // requests (request_total; request_failed_total when the key is failed)
	carry   float64 // fraction of weighted requests not yet counted
	latency [2]histogramState
}

// histogramState is one latency histogram's count and sum; its buckets are in seriesTable.
type histogramState struct {
	count uint64
	sum   float64
}

// Indexes of latency.
const (
	histServer = 0
	histClient = 1
)

// seriesTable holds the edge series, keyed by their interned key, cumulative since start.
// Owned by the aggregator; a flush reads a copy (snapshot.go).
type seriesTable struct {
	p       *plan
	index   hash.Index
	series  []series
	keys    []uint32 // keyLen ids per series
	keyLen  int
	buckets []uint64 // 2 × (len(bounds)+1) per series: server, then client
	nb      int
	expo    [][2]*structure.Histogram[float64] // per series, exponential mode only
	free    []uint32
	live    int
	scratch []uint32
	hashBuf []byte
	keyHash func([]byte) uint64
}

func newSeriesTable(p *plan) *seriesTable {
	kl := keyDims + 2*len(p.dims)
	t := &seriesTable{p: p, keyLen: kl, scratch: make([]uint32, kl), keyHash: hash.Sum64}
	if p.bounds != nil {
		t.nb = len(p.bounds) + 1
	}
	return t
}

// record counts one request of e, servicegraph's onComplete.
func (t *seriesTable) record(e *edge, dims []uint32, now int64) {
	k := t.scratch
	k[keyClient], k[keyServer] = e.client, e.server
	k[keyConn], k[keyFailed], k[keyLabel] = uint32(e.conn), 0, uint32(e.label)
	if e.failed {
		k[keyFailed] = 1
	}
	if e.late && t.p.late.mode == lateModeSeparate {
		k[keyLabel] |= lateLabel
	}
	copy(k[keyDims:], dims)
	id := t.lookup(k)
	s := &t.series[id]
	s.lastAt = now
	// Counts are integers: a weighted request adds the whole part of carry + weight and keeps
	// the fraction, so a series' count stays within 1 of its weighted total.
	w := e.weight
	inc := math.Floor(s.carry + w)
	s.carry += w - inc
	n := uint64(inc)
	s.count += n
	t.observe(id, histServer, e.serverLatency, n)
	t.observe(id, histClient, e.clientLatency, n)
}

// observe adds n requests of latency v to histogram which of series id; the sum grows by
// v × n, so that count and sum describe the same requests.
func (t *seriesTable) observe(id uint32, which int, v float64, n uint64) {
	if n == 0 {
		return
	}
	s := &t.series[id]
	h := &s.latency[which]
	h.count += n
	h.sum += v * float64(n)
	if t.p.bounds == nil {
		x := t.expo[id][which]
		if x == nil {
			x = new(structure.Histogram[float64])
			x.Init(structure.NewConfig(structure.WithMaxSize(t.p.expoMaxSize)))
			t.expo[id][which] = x
		}
		x.UpdateByIncr(v, n)
		return
	}
	// servicegraph's bucket search (the first bound >= v), in constant time.
	t.buckets[int(id)*2*t.nb+which*t.nb+t.p.explicit.Index(v)] += n
}

// lookup returns the id of the series of key k, created if new.
func (t *seriesTable) lookup(k []uint32) uint32 {
	t.hashBuf = t.hashBuf[:0]
	for _, v := range k {
		t.hashBuf = binary.LittleEndian.AppendUint32(t.hashBuf, v)
	}
	h := t.keyHash(t.hashBuf)
	p := t.index.Probe(h)
	for id, ok := p.Next(); ok; id, ok = p.Next() {
		if equalIDs(t.key(id), k) {
			return id
		}
	}
	var id uint32
	if n := len(t.free); n > 0 {
		id = t.free[n-1]
		t.free = t.free[:n-1]
		clear(t.buckets[int(id)*2*t.nb : int(id+1)*2*t.nb])
		if t.expo != nil {
			t.expo[id] = [2]*structure.Histogram[float64]{}
		}
	} else {
		id = uint32(len(t.series))
		t.series = append(t.series, series{})
		t.keys = append(t.keys, make([]uint32, t.keyLen)...)
		t.buckets = append(t.buckets, make([]uint64, 2*t.nb)...)
		if t.p.bounds == nil {
			t.expo = append(t.expo, [2]*structure.Histogram[float64]{})
		}
	}
	t.series[id] = series{hash: h, live: true}
	copy(t.key(id), k)
	t.index.Insert(h, id)
	t.live++
	return id
}

func (t *seriesTable) key(id uint32) []uint32 {
	return t.keys[int(id)*t.keyLen : int(id+1)*t.keyLen]
}

// bucketCounts returns the explicit bucket counts of series id's histogram which.
func (t *seriesTable) bucketCounts(id uint32, which int) []uint64 {
	at := int(id)*2*t.nb + which*t.nb
	return t.buckets[at : at+t.nb]
}

// expire removes the series without a request since before, servicegraph's cache cleaning.
func (t *seriesTable) expire(before int64) {
	for id := range t.series {
		if s := &t.series[id]; s.live && s.lastAt < before {
			t.remove(uint32(id))
		}
	}
}

// restart begins a delta interval once the last one was handed to the sender: a series that
// counted requests in it starts again from zero, a series idle through it is removed, unless a
// weighted fraction is still pending (it then waits for its next request or its expiry).
func (t *seriesTable) restart() {
	for id := range t.series {
		s := &t.series[id]
		switch {
		case !s.live:
		case s.count == 0 && s.carry == 0:
			t.remove(uint32(id))
		default:
			s.count = 0
			s.latency = [2]histogramState{}
			clear(t.buckets[id*2*t.nb : (id+1)*2*t.nb])
			if t.expo != nil {
				for _, x := range t.expo[id] {
					if x != nil {
						x.Clear()
					}
				}
			}
		}
	}
}

func (t *seriesTable) remove(id uint32) {
	s := &t.series[id]
	t.index.Delete(s.hash, id)
	s.live = false
	t.free = append(t.free, id)
	t.live--
}

// markStrings marks every string a series key refers to.
func (t *seriesTable) markStrings(ids *stringIDs) {
	for id := range t.series {
		if !t.series[id].live {
			continue
		}
		k := t.key(uint32(id))
		ids.mark(k[keyClient])
		ids.mark(k[keyServer])
		for _, d := range k[keyDims:] {
			ids.mark(d)
		}
	}
}

func equalIDs(a, b []uint32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
