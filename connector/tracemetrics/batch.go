package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"bytes"
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/otelcol-red/otelcol-red/internal/intake"
	"github.com/otelcol-red/otelcol-red/internal/sampling"
)

// deltaBatch is what one ConsumeTraces call hands to the aggregator: the call's spans reduced
// to one entry per distinct series, with the canonical key bytes of each series and resource,
// the histogram observations, and exemplar candidates. It is pooled; after warm-up, reducing a
// batch allocates nothing.
type deltaBatch struct {
	ts        int64 // when the batch was reduced (clock), the series' last-seen and start time
	spans     int64 // spans reduced into the batch (resources with service.name): aggregated_spans
	resources []batchResource
	series    []batchSeries
	obs       []observation
	exemplars []exemplar
	arena     []byte   // key bytes of resources and series
	table     []uint32 // open-addressing table over series: index+1, 0 empty

	sorter    attrSorter // resource attribute sorting
	arenaPeak int        // the arena's largest length (a key is written before it is cut back)

	touch byte // see touchSpans

	names nameScratch // span names built by span_name (spanname.go)

	globs globScratch // glob dimensions' answers and matches (globdims.go)

	held int64 // footprint when queued, given back to the intake's byte bound once applied

	// Sampling weights (sampling.go): only once a span weighs other than 1.
	weighted       bool
	seriesW        []float64 // weighted count per series
	obsW           []float64 // weight per observation
	invalidWeights int64     // spans whose tracestate threshold or probability was invalid
	lastTS         string    // the last tracestate parsed, and what it said
	lastCount      float64
	lastStatus     sampling.Status
}

// ref locates bytes in deltaBatch.arena.
type ref struct{ off, n uint32 }

func (b *deltaBatch) bytes(r ref) []byte { return b.arena[r.off : r.off+r.n] }

type batchResource struct {
	hash    uint64
	key     ref // identity: attributes (filtered by resource_metrics_key_attributes), sorted
	full    ref // output attributes, sorted; equal to key without a filter
	service ref // service.name value
}

type batchSeries struct {
	hash     uint64
	key      ref
	res      uint32
	fam      uint8
	count    uint64  // spans (or events) of the series in this batch
	sum      float64 // durations, in the histogram unit
	min, max float64
	exOff    int32 // first exemplar slot, -1 when none
	exN      int32
}

// observation is one duration: the explicit bucket index, or the exponential scale-20 index.
type observation struct {
	series uint32
	code   int32
}

// deltaBatches is how the intake pipe handles deltaBatch.
var deltaBatches = intake.Batch[deltaBatch]{
	Reset:     (*deltaBatch).reset,
	Empty:     (*deltaBatch).empty,
	Footprint: (*deltaBatch).footprint,
	Held:      func(b *deltaBatch) *int64 { return &b.held },
}

func (b *deltaBatch) reset() {
	b.spans = 0
	b.arenaPeak = 0
	b.sorter.peakAttrs, b.sorter.peakKeys = 0, 0
	b.resources = b.resources[:0]
	b.series = b.series[:0]
	b.obs = b.obs[:0]
	b.exemplars = b.exemplars[:0]
	b.arena = b.arena[:0]
	b.resetWeights()
}

func (b *deltaBatch) empty() bool { return len(b.series) == 0 }

// footprint is the batch's heap in bytes, by the capacities its slices hold: what it costs
// while queued and while kept for reuse. Slice headers and the struct itself are left out.
func (b *deltaBatch) footprint() int64 {
	return int64(cap(b.resources))*int64(unsafe.Sizeof(batchResource{})) +
		int64(cap(b.series))*int64(unsafe.Sizeof(batchSeries{})) +
		int64(cap(b.obs))*int64(unsafe.Sizeof(observation{})) +
		int64(cap(b.exemplars))*int64(unsafe.Sizeof(exemplar{})) +
		int64(cap(b.arena)) + int64(cap(b.table))*4 + b.sorter.footprint() +
		int64(cap(b.names.semconv)+cap(b.names.rule)) + b.names.cluster.Footprint() +
		int64(cap(b.seriesW)+cap(b.obsW))*8 + b.globs.footprint()
}

// prepareTable sizes the series table for about n series and clears it.
func (b *deltaBatch) prepareTable(n, capHint int) {
	size := 16
	if n > 4 {
		size = 1 << bits.Len(uint(n*2-1))
	}
	if cap(b.table) < size {
		b.table = make([]uint32, size, max(size, capHint))
		return
	}
	b.table = b.table[:size]
	clear(b.table)
}

func (b *deltaBatch) growTable() {
	size := len(b.table) * 2
	if cap(b.table) >= size {
		b.table = b.table[:size]
		clear(b.table)
	} else {
		b.table = make([]uint32, size)
	}
	mask := uint64(size - 1)
	for i := range b.series {
		j := b.series[i].hash & mask
		for b.table[j] != 0 {
			j = (j + 1) & mask
		}
		b.table[j] = uint32(i + 1)
	}
}

// upsert returns the index of the series whose key was just appended to the arena at off and
// whose identity hashes to h, adding the series if new. The key is encoded in place: a known
// series truncates the arena back to off, a new one keeps it there, so no key is copied.
func (b *deltaBatch) upsert(res uint32, f *family, off int, h uint64) uint32 {
	key := b.arena[off:]
	b.arenaPeak = max(b.arenaPeak, len(b.arena))
	id := identity(key, f)
	mask := uint64(len(b.table) - 1)
	i := h & mask
	for {
		e := b.table[i]
		if e == 0 {
			break
		}
		s := &b.series[e-1]
		if s.hash == h && s.res == res && s.fam == f.index && bytes.Equal(identity(b.bytes(s.key), f), id) {
			b.arena = b.arena[:off]
			return e - 1
		}
		i = (i + 1) & mask
	}
	if (len(b.series)+1)*2 > len(b.table) {
		b.growTable()
		mask = uint64(len(b.table) - 1)
		i = h & mask
		for b.table[i] != 0 {
			i = (i + 1) & mask
		}
	}
	b.series = append(b.series, batchSeries{
		hash: h, key: ref{uint32(off), uint32(len(key))}, res: res, fam: f.index,
		min: math.Inf(1), max: math.Inf(-1), exOff: -1,
	})
	b.table[i] = uint32(len(b.series))
	return uint32(len(b.series) - 1)
}

// sizeHints are the largest sizes batches have reached lately. A batch taken from the free list
// grows to them before it reduces anything, in one allocation per buffer, instead of doubling
// its way up over many requests: batches circulate through the free list in turn, and without
// this each one would keep allocating until it had met the largest request itself.
//
// "Lately" is this flush interval and the previous one: rotate (at each flush) forgets older
// maxima, so one large request does not make every batch created afterwards large while the
// traffic is made of small ones. Batches keep the capacity they have either way.
type sizeHints struct {
	cur  [numHints]atomic.Int64 // what batches are grown to: the largest since the last rotate but one
	next [numHints]atomic.Int64 // the largest since the last rotate
}

const (
	hintResources = iota
	hintSeries
	hintObs
	hintExemplars
	hintArena // in units of 64 bytes
	hintTable
	hintAttrs
	hintAttrKeys
	hintSeriesWeights // 0 until weighted traffic comes (sampling.go)
	hintObsWeights
	numHints
)

func (h *sizeHints) get(i int) int64 { return h.cur[i].Load() }

func (h *sizeHints) reserve(b *deltaBatch) {
	b.resources = reserve(b.resources, h.get(hintResources))
	b.series = reserve(b.series, h.get(hintSeries))
	b.obs = reserve(b.obs, h.get(hintObs))
	b.exemplars = reserve(b.exemplars, h.get(hintExemplars))
	b.arena = reserve(b.arena, 64*h.get(hintArena))
	b.sorter.attrs = reserve(b.sorter.attrs, h.get(hintAttrs))
	b.seriesW = reserve(b.seriesW, h.get(hintSeriesWeights))
	b.obsW = reserve(b.obsW, h.get(hintObsWeights))
	// The sorter's memo is kept across requests: grow it keeping its content.
	b.sorter.perm = regrow(b.sorter.perm, h.get(hintAttrs))
	b.sorter.memoLens = regrow(b.sorter.memoLens, h.get(hintAttrs))
	b.sorter.memoKeys = regrow(b.sorter.memoKeys, h.get(hintAttrKeys))
}

// hintLimit bounds every hint (in elements; the arena's in bytes, at 64 per element): one
// huge request must not make every pooled batch huge. Requests of up to hintLimit series are
// covered; larger ones grow their batch on their own, as without hints.
const hintLimit = 2048

// update raises the hints to what b's request used: lengths, not capacities, or a batch grown
// to a hint would keep that hint alive after the traffic that set it is gone.
func (h *sizeHints) update(b *deltaBatch) {
	h.raise(hintResources, len(b.resources))
	h.raise(hintSeries, len(b.series))
	h.raise(hintObs, len(b.obs))
	h.raise(hintExemplars, len(b.exemplars))
	h.raise(hintArena, (max(b.arenaPeak, len(b.arena))+63)/64)
	h.raise(hintTable, len(b.table))
	h.raise(hintAttrs, b.sorter.peakAttrs)
	h.raise(hintAttrKeys, b.sorter.peakKeys)
	h.raise(hintSeriesWeights, len(b.seriesW))
	h.raise(hintObsWeights, len(b.obsW))
}

func (h *sizeHints) raise(i, n int) {
	raise(&h.cur[i], n)
	raise(&h.next[i], n)
}

// rotate starts a new interval: the hints become the largest sizes of the interval that ends.
// A producer raising a hint at the same moment may see its raise forgotten: the next request
// of that size raises it again.
func (h *sizeHints) rotate() {
	for i := range h.cur {
		h.cur[i].Store(h.next[i].Swap(0))
	}
}

func raise(v *atomic.Int64, n int) {
	n = min(n, hintLimit)
	for {
		cur := v.Load()
		if int64(n) <= cur || v.CompareAndSwap(cur, int64(n)) {
			return
		}
	}
}
