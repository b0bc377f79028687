package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"bytes"
	"math"
	"math/bits"
	"unsafe"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/clustering"
	"github.com/otelcol-red/otelcol-red/internal/intake"
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

	// clusters holds the templates span_name.clustering built for the batch's spans and the
	// names it found none for, which the aggregator hands to the learner.
	clusters clustering.Scratch

	// scratch is the producer's working memory, kept with the batch for reuse; nil until a
	// producer first fills the batch.
	scratch Scratch

	held int64 // footprint when queued, given back to the intake's byte bound once applied

	// Sampling weights: only once a span weighs other than 1 (see startWeights).
	weighted       bool
	seriesW        []float64 // weighted count per series
	obsW           []float64 // weight per observation
	invalidWeights int64     // spans whose tracestate threshold or probability was invalid
}

// Scratch is a producer's working memory kept with a batch, so that it is pooled with it: what
// the reducer needs while it reduces a request (span names, glob matches, the last tracestate)
// and the aggregator never reads. It is the reducer's own type.
type Scratch interface {
	// Footprint is its heap in bytes, counted with the batch's.
	Footprint() int64
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
		b.clusters.Footprint() + int64(cap(b.seriesW)+cap(b.obsW))*8 + b.scratchFootprint()
}

func (b *deltaBatch) scratchFootprint() int64 {
	if b.scratch == nil {
		return 0
	}
	return b.scratch.Footprint()
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

// The buffers of a batch that intake.SizeHints sizes: a batch from the free list grows to what
// the requests of this interval and the previous one needed before it reduces anything
// (intake.SizeHints has why), in one allocation per buffer.
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

// hintLimit bounds every hint (in elements; the arena's in bytes, at 64 per element): one
// huge request must not make every pooled batch huge. Requests of up to hintLimit series are
// covered; larger ones grow their batch on their own, as without hints.
const hintLimit = 2048

// reserve grows b's buffers, empty, to the hints, and its sorter's memo keeping its content.
func (b *deltaBatch) reserve(h *intake.SizeHints) {
	b.resources = intake.Reserve(b.resources, h.Get(hintResources))
	b.series = intake.Reserve(b.series, h.Get(hintSeries))
	b.obs = intake.Reserve(b.obs, h.Get(hintObs))
	b.exemplars = intake.Reserve(b.exemplars, h.Get(hintExemplars))
	b.arena = intake.Reserve(b.arena, 64*h.Get(hintArena))
	b.sorter.attrs = intake.Reserve(b.sorter.attrs, h.Get(hintAttrs))
	b.seriesW = intake.Reserve(b.seriesW, h.Get(hintSeriesWeights))
	b.obsW = intake.Reserve(b.obsW, h.Get(hintObsWeights))
	// The sorter's memo is kept across requests: grow it keeping its content.
	b.sorter.perm = intake.Regrow(b.sorter.perm, h.Get(hintAttrs))
	b.sorter.memoLens = intake.Regrow(b.sorter.memoLens, h.Get(hintAttrs))
	b.sorter.memoKeys = intake.Regrow(b.sorter.memoKeys, h.Get(hintAttrKeys))
}

// measure raises the hints to what b's request used.
func (b *deltaBatch) measure(h *intake.SizeHints) {
	h.Raise(hintResources, len(b.resources))
	h.Raise(hintSeries, len(b.series))
	h.Raise(hintObs, len(b.obs))
	h.Raise(hintExemplars, len(b.exemplars))
	h.Raise(hintArena, (max(b.arenaPeak, len(b.arena))+63)/64)
	h.Raise(hintTable, len(b.table))
	h.Raise(hintAttrs, b.sorter.peakAttrs)
	h.Raise(hintAttrKeys, b.sorter.peakKeys)
	h.Raise(hintSeriesWeights, len(b.seriesW))
	h.Raise(hintObsWeights, len(b.obsW))
}

// Weighted batches. A batch is unweighted (every span counts 1) until its first span with a
// weight other than 1: from then on it keeps, beside the series and observations, their
// weights (seriesW, obsW), backfilled with 1 for what came before. So traffic without sampling
// information pays for nothing but the tracestate length check.

// startWeights makes b weighted: every series and observation so far weighs 1 per span.
func (b *deltaBatch) startWeights() {
	b.weighted = true
	b.seriesW = b.seriesW[:0]
	for i := range b.series {
		b.seriesW = append(b.seriesW, float64(b.series[i].count))
	}
	b.obsW = b.obsW[:0]
	for range b.obs {
		b.obsW = append(b.obsW, 1)
	}
}

// weigh adds weight w of one span (or event) to series idx, and to the observation just
// appended when the family has durations.
func (b *deltaBatch) weigh(idx uint32, w float64, obs bool) {
	for len(b.seriesW) < len(b.series) {
		b.seriesW = append(b.seriesW, 0)
	}
	b.seriesW[idx] += w
	if obs {
		b.obsW = append(b.obsW, w)
	}
}

func (b *deltaBatch) resetWeights() {
	b.weighted = false
	b.invalidWeights = 0
	b.seriesW = b.seriesW[:0]
	b.obsW = b.obsW[:0]
}
