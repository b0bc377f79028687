package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"encoding/binary"
	"math"

	"github.com/lightstep/go-expohisto/structure"

	"github.com/otelcol-red/otelcol-red/internal/exemplar"
	"github.com/otelcol-red/otelcol-red/internal/hash"
	"github.com/otelcol-red/otelcol-red/internal/latespans"
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
	latency [maxHistograms]histogramState
}

// histogramState is one latency histogram's count and sum; its buckets are in seriesTable.
type histogramState struct {
	count uint64
	sum   float64
}

// Indexes of latency: the messaging histogram only with
// enable_messaging_system_latency_histogram (plan.histograms).
const (
	histServer    = 0
	histClient    = 1
	histMessaging = 2
	maxHistograms = 3
)

// seriesTable holds the edge series, keyed by their interned key, cumulative since start.
// Owned by the aggregator; a flush reads a copy (snapshot.go).
type seriesTable struct {
	p       *plan
	index   hash.Index
	series  []series
	keys    []uint32 // keyLen ids per series
	keyLen  int
	buckets []uint64 // nh × (len(bounds)+1) per series: server, client, messaging
	nb      int
	nh      int                                            // histograms per series (plan.histograms)
	expo    [][maxHistograms]*structure.Histogram[float64] // per series, exponential mode only
	// exemplars holds nh × plan.exemplars slots per series, exemplarN how many of each
	// histogram's are filled in the interval; empty without exemplars.
	exemplars []exemplar.Exemplar
	exemplarN []uint8
	free      []uint32
	live      int
	scratch   []uint32
	hashBuf   []byte
	keyHash   func([]byte) uint64
	limits    *seriesLimits // max_series_per_edge, max_cardinality_per_label; nil when off
}

func newSeriesTable(p *plan) *seriesTable {
	kl := keyDims + 2*len(p.dims)
	t := &seriesTable{p: p, keyLen: kl, nh: p.histograms, scratch: make([]uint32, kl), keyHash: hash.Sum64}
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
	if e.late && t.p.late.Mode == latespans.Separate {
		k[keyLabel] |= lateLabel
	}
	copy(k[keyDims:], dims)
	if t.limits != nil && !t.has(k) {
		t.limits.admit(k, t.has) // limits.go: may replace dimension values in k
	}
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
	if n == 0 {
		return
	}
	t.observe(id, histServer, e.serverLatency, n)
	t.observe(id, histClient, e.clientLatency, n)
	// Tempo's messaging latency: only for messaging edges of which both spans came, and not
	// when the consumer started before the producer ended (clocks apart).
	messaging := t.nh > histMessaging && e.conn == connMessaging && e.serverStart >= e.clientEnd
	if messaging {
		t.observe(id, histMessaging, float64(e.serverStart-e.clientEnd)/1e9, n)
	}
	if t.p.exemplars == 0 {
		return
	}
	// Each histogram names the span it measured, or the other one where that side is not a
	// span (a database or a virtual node; "user" for a root server span), and only a span the
	// Elasticsearch branch stores where exemplars.slow_threshold says so.
	server := exemplar.Exemplar{TraceID: e.serverTrace, SpanID: e.serverSpan, Value: e.serverLatency, IsError: e.failed}
	client := exemplar.Exemplar{TraceID: e.trace, SpanID: e.span, Value: e.clientLatency, IsError: e.failed}
	serverStored, clientStored := e.serverStored, e.clientStored
	if server.SpanID.IsEmpty() {
		server.TraceID, server.SpanID, serverStored = client.TraceID, client.SpanID, clientStored
	}
	if client.SpanID.IsEmpty() {
		client.TraceID, client.SpanID, clientStored = server.TraceID, server.SpanID, serverStored
	}
	if serverStored {
		t.offer(id, histServer, &server)
	}
	if clientStored {
		t.offer(id, histClient, &client)
	}
	if messaging && serverStored {
		server.Value = float64(e.serverStart-e.clientEnd) / 1e9
		t.offer(id, histMessaging, &server)
	}
}

// offer keeps x among the exemplars of histogram which of series id, if it is among the
// plan.exemplars strongest of the interval.
func (t *seriesTable) offer(id uint32, which int, x *exemplar.Exemplar) {
	limit := t.p.exemplars
	at := int(id)*t.nh + which
	slots := t.exemplars[at*limit : (at+1)*limit]
	if n := int(t.exemplarN[at]); n < limit {
		slots[n] = *x
		t.exemplarN[at]++
		return
	}
	weakest := 0
	for i := 1; i < limit; i++ {
		if slots[weakest].Stronger(&slots[i]) {
			weakest = i
		}
	}
	if x.Stronger(&slots[weakest]) {
		slots[weakest] = *x
	}
}

// forgetExemplars starts the next interval's exemplars, once a flush copied them.
func (t *seriesTable) forgetExemplars() { clear(t.exemplarN) }

// observe adds n requests of latency v to histogram which of series id; the sum grows by
// v × n, so that count and sum describe the same requests.
func (t *seriesTable) observe(id uint32, which int, v float64, n uint64) {
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
	t.buckets[int(id)*t.nh*t.nb+which*t.nb+t.p.explicit.Index(v)] += n
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
		clear(t.buckets[int(id)*t.nh*t.nb : int(id+1)*t.nh*t.nb])
		if t.expo != nil {
			t.expo[id] = [maxHistograms]*structure.Histogram[float64]{}
		}
		if t.p.exemplars > 0 {
			clear(t.exemplarN[int(id)*t.nh : int(id+1)*t.nh])
		}
	} else {
		id = uint32(len(t.series))
		t.series = append(t.series, series{})
		t.keys = append(t.keys, make([]uint32, t.keyLen)...)
		t.buckets = append(t.buckets, make([]uint64, t.nh*t.nb)...)
		if t.p.bounds == nil {
			t.expo = append(t.expo, [maxHistograms]*structure.Histogram[float64]{})
		}
		if t.p.exemplars > 0 {
			t.exemplars = append(t.exemplars, make([]exemplar.Exemplar, t.nh*t.p.exemplars)...)
			t.exemplarN = append(t.exemplarN, make([]uint8, t.nh)...)
		}
	}
	t.series[id] = series{hash: h, live: true}
	copy(t.key(id), k)
	t.index.Insert(h, id)
	t.live++
	if t.limits != nil {
		t.limits.created(k)
	}
	return id
}

// has reports whether key k has a series.
func (t *seriesTable) has(k []uint32) bool {
	t.hashBuf = t.hashBuf[:0]
	for _, v := range k {
		t.hashBuf = binary.LittleEndian.AppendUint32(t.hashBuf, v)
	}
	p := t.index.Probe(t.keyHash(t.hashBuf))
	for id, ok := p.Next(); ok; id, ok = p.Next() {
		if equalIDs(t.key(id), k) {
			return true
		}
	}
	return false
}

func (t *seriesTable) key(id uint32) []uint32 {
	return t.keys[int(id)*t.keyLen : int(id+1)*t.keyLen]
}

// bucketCounts returns the explicit bucket counts of series id's histogram which.
func (t *seriesTable) bucketCounts(id uint32, which int) []uint64 {
	at := int(id)*t.nh*t.nb + which*t.nb
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
			s.latency = [maxHistograms]histogramState{}
			clear(t.buckets[id*t.nh*t.nb : (id+1)*t.nh*t.nb])
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
	if t.limits != nil {
		t.limits.removed(t.key(id))
	}
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
