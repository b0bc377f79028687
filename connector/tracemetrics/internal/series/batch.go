package series // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

import (
	"bytes"
	"math"
	"math/bits"
	"unsafe"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/clustering"
	"github.com/otelcol-red/otelcol-red/internal/intake"
	"github.com/otelcol-red/otelcol-red/internal/latespans"
)

// Batch is what one ConsumeTraces call hands to the aggregator: the call's spans reduced
// to one entry per distinct series, with the canonical key bytes of each series and resource,
// the histogram observations, and exemplar candidates. It is pooled; after warm-up, reducing a
// batch allocates nothing.
type Batch struct {
	TS        int64 // when the batch was reduced (clock), the series' last-seen and start time
	Spans     int64 // spans reduced into the batch (resources with service.name): aggregated_spans
	Resources []BatchResource
	Series    []BatchSeries
	Obs       []Observation
	Exemplars []Exemplar
	Arena     []byte   // key bytes of resources and series
	table     []uint32 // open-addressing table over series: index+1, 0 empty

	Sorter    AttrSorter // resource attribute sorting
	ArenaPeak int        // the arena's largest length (a key is written before it is cut back)

	Touch byte // see touchSpans

	// Clusters holds the templates span_name.clustering built for the batch's spans and the
	// names it found none for, which the aggregator hands to the learner.
	Clusters clustering.Scratch

	// Scratch is the producer's working memory, kept with the batch for reuse; nil until a
	// producer first fills the batch.
	Scratch Scratch

	held int64 // footprint when queued, given back to the intake's byte bound once applied

	// Sampling weights: only once a span weighs other than 1 (see startWeights).
	Weighted       bool
	SeriesW        []float64 // weighted count per series
	ObsW           []float64 // weight per observation
	InvalidWeights int64     // spans whose tracestate threshold or probability was invalid

	// Late counts what the batch saw of its spans' end times (late_spans, internal/latespans).
	Late latespans.Counts
}

// Scratch is a producer's working memory kept with a batch, so that it is pooled with it: what
// the reducer needs while it reduces a request (span names, glob matches, the last tracestate)
// and the aggregator never reads. It is the reducer's own type.
type Scratch interface {
	// Footprint is its heap in bytes, counted with the batch's.
	Footprint() int64
}

// Ref locates bytes in deltaBatch.arena.
type Ref struct{ Off, N uint32 }

// Bytes returns the bytes r locates in the arena.
func (b *Batch) Bytes(r Ref) []byte { return b.Arena[r.Off : r.Off+r.N] }

// BatchResource is a resource of the batch's request.
type BatchResource struct {
	Hash    uint64
	Key     Ref // identity: attributes (filtered by resource_metrics_key_attributes), sorted
	Full    Ref // output attributes, sorted; equal to key without a filter
	Service Ref // service.name value
}

// BatchSeries is one series of the batch: what its spans add to it.
type BatchSeries struct {
	Hash     uint64
	Key      Ref
	Res      uint32
	Fam      uint8
	Count    uint64  // spans (or events) of the series in this batch
	Sum      float64 // durations, in the histogram unit
	Min, Max float64
	ExOff    int32 // first exemplar slot, -1 when none
	ExN      int32
}

// Observation is one duration: the explicit bucket index, or the exponential scale-20 index.
type Observation struct {
	Series uint32
	Code   int32
}

// Batches is how the intake pipe handles deltaBatch.
var Batches = intake.Batch[Batch]{
	Reset:     (*Batch).reset,
	Empty:     (*Batch).empty,
	Footprint: (*Batch).footprint,
	Held:      func(b *Batch) *int64 { return &b.held },
}

func (b *Batch) reset() {
	b.Spans = 0
	b.ArenaPeak = 0
	b.Sorter.peakAttrs, b.Sorter.peakKeys = 0, 0
	b.Resources = b.Resources[:0]
	b.Series = b.Series[:0]
	b.Obs = b.Obs[:0]
	b.Exemplars = b.Exemplars[:0]
	b.Arena = b.Arena[:0]
	b.resetWeights()
	b.Late = latespans.Counts{}
}

// empty reports whether the batch has nothing for the aggregator: a batch whose spans were all
// dropped as late still carries their counts.
func (b *Batch) empty() bool { return len(b.Series) == 0 && !b.Late.Any() }

// footprint is the batch's heap in bytes, by the capacities its slices hold: what it costs
// while queued and while kept for reuse. Slice headers and the struct itself are left out.
func (b *Batch) footprint() int64 {
	return int64(cap(b.Resources))*int64(unsafe.Sizeof(BatchResource{})) +
		int64(cap(b.Series))*int64(unsafe.Sizeof(BatchSeries{})) +
		int64(cap(b.Obs))*int64(unsafe.Sizeof(Observation{})) +
		int64(cap(b.Exemplars))*int64(unsafe.Sizeof(Exemplar{})) +
		int64(cap(b.Arena)) + int64(cap(b.table))*4 + b.Sorter.footprint() +
		b.Clusters.Footprint() + int64(cap(b.SeriesW)+cap(b.ObsW))*8 + b.scratchFootprint()
}

func (b *Batch) scratchFootprint() int64 {
	if b.Scratch == nil {
		return 0
	}
	return b.Scratch.Footprint()
}

// PrepareTable sizes the series table for about n series and clears it.
func (b *Batch) PrepareTable(n, capHint int) {
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

func (b *Batch) growTable() {
	size := len(b.table) * 2
	if cap(b.table) >= size {
		b.table = b.table[:size]
		clear(b.table)
	} else {
		b.table = make([]uint32, size)
	}
	mask := uint64(size - 1)
	for i := range b.Series {
		j := b.Series[i].Hash & mask
		for b.table[j] != 0 {
			j = (j + 1) & mask
		}
		b.table[j] = uint32(i + 1)
	}
}

// Upsert returns the index of the series whose key was just appended to the arena at off and
// whose identity hashes to h, adding the series if new. The key is encoded in place: a known
// series truncates the arena back to off, a new one keeps it there, so no key is copied.
func (b *Batch) Upsert(res uint32, f *Family, off int, h uint64) uint32 {
	key := b.Arena[off:]
	b.ArenaPeak = max(b.ArenaPeak, len(b.Arena))
	id := Identity(key, f)
	mask := uint64(len(b.table) - 1)
	i := h & mask
	for {
		e := b.table[i]
		if e == 0 {
			break
		}
		s := &b.Series[e-1]
		if s.Hash == h && s.Res == res && s.Fam == f.Index && bytes.Equal(Identity(b.Bytes(s.Key), f), id) {
			b.Arena = b.Arena[:off]
			return e - 1
		}
		i = (i + 1) & mask
	}
	if (len(b.Series)+1)*2 > len(b.table) {
		b.growTable()
		mask = uint64(len(b.table) - 1)
		i = h & mask
		for b.table[i] != 0 {
			i = (i + 1) & mask
		}
	}
	b.Series = append(b.Series, BatchSeries{
		Hash: h, Key: Ref{uint32(off), uint32(len(key))}, Res: res, Fam: f.Index,
		Min: math.Inf(1), Max: math.Inf(-1), ExOff: -1,
	})
	b.table[i] = uint32(len(b.Series))
	return uint32(len(b.Series) - 1)
}

// The buffers of a batch that intake.SizeHints sizes: a batch from the free list grows to what
// the requests of this interval and the previous one needed before it reduces anything
// (intake.SizeHints has why), in one allocation per buffer.
const (
	hintResources = iota
	HintSeries
	hintObs
	hintExemplars
	hintArena // in units of 64 bytes
	HintTable
	hintAttrs
	hintAttrKeys
	hintSeriesWeights // 0 until weighted traffic comes (StartWeights)
	hintObsWeights
	NumHints
)

// HintLimit bounds every hint (in elements; the arena's in bytes, at 64 per element): one
// huge request must not make every pooled batch huge. Requests of up to HintLimit series are
// covered; larger ones grow their batch on their own, as without hints.
const HintLimit = 2048

// Reserve grows b's buffers, empty, to the hints, and its sorter's memo keeping its content.
func (b *Batch) Reserve(h *intake.SizeHints) {
	b.Resources = intake.Reserve(b.Resources, h.Get(hintResources))
	b.Series = intake.Reserve(b.Series, h.Get(HintSeries))
	b.Obs = intake.Reserve(b.Obs, h.Get(hintObs))
	b.Exemplars = intake.Reserve(b.Exemplars, h.Get(hintExemplars))
	b.Arena = intake.Reserve(b.Arena, 64*h.Get(hintArena))
	b.Sorter.attrs = intake.Reserve(b.Sorter.attrs, h.Get(hintAttrs))
	b.SeriesW = intake.Reserve(b.SeriesW, h.Get(hintSeriesWeights))
	b.ObsW = intake.Reserve(b.ObsW, h.Get(hintObsWeights))
	// The sorter's memo is kept across requests: grow it keeping its content.
	b.Sorter.perm = intake.Regrow(b.Sorter.perm, h.Get(hintAttrs))
	b.Sorter.memoLens = intake.Regrow(b.Sorter.memoLens, h.Get(hintAttrs))
	b.Sorter.memoKeys = intake.Regrow(b.Sorter.memoKeys, h.Get(hintAttrKeys))
}

// Measure raises the hints to what b's request used.
func (b *Batch) Measure(h *intake.SizeHints) {
	h.Raise(hintResources, len(b.Resources))
	h.Raise(HintSeries, len(b.Series))
	h.Raise(hintObs, len(b.Obs))
	h.Raise(hintExemplars, len(b.Exemplars))
	h.Raise(hintArena, (max(b.ArenaPeak, len(b.Arena))+63)/64)
	h.Raise(HintTable, len(b.table))
	h.Raise(hintAttrs, b.Sorter.peakAttrs)
	h.Raise(hintAttrKeys, b.Sorter.peakKeys)
	h.Raise(hintSeriesWeights, len(b.SeriesW))
	h.Raise(hintObsWeights, len(b.ObsW))
}

// Weighted batches. A batch is unweighted (every span counts 1) until its first span with a
// weight other than 1: from then on it keeps, beside the series and observations, their
// weights (seriesW, obsW), backfilled with 1 for what came before. So traffic without sampling
// information pays for nothing but the tracestate length check.

// StartWeights makes b weighted: every series and observation so far weighs 1 per span.
func (b *Batch) StartWeights() {
	b.Weighted = true
	b.SeriesW = b.SeriesW[:0]
	for i := range b.Series {
		b.SeriesW = append(b.SeriesW, float64(b.Series[i].Count))
	}
	b.ObsW = b.ObsW[:0]
	for range b.Obs {
		b.ObsW = append(b.ObsW, 1)
	}
}

// Weigh adds weight w of one span (or event) to series idx, and to the observation just
// appended when the family has durations.
func (b *Batch) Weigh(idx uint32, w float64, obs bool) {
	for len(b.SeriesW) < len(b.Series) {
		b.SeriesW = append(b.SeriesW, 0)
	}
	b.SeriesW[idx] += w
	if obs {
		b.ObsW = append(b.ObsW, w)
	}
}

func (b *Batch) resetWeights() {
	b.Weighted = false
	b.InvalidWeights = 0
	b.SeriesW = b.SeriesW[:0]
	b.ObsW = b.ObsW[:0]
}
