package store // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"

import (
	"math/bits"
	"unsafe"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/mem"
)

// This file keeps the state of exponential histogram series off the
// garbage collector's scan path, as the rows and explicit buckets are: a
// fixed-size pointer-free header per row in off-heap chunks indexed like
// the rows, and the buckets of both sides in blocks of an off-heap arena.
// Held in a map of heap objects (a state and two bucket slices per series)
// they were marked at every collection: with 100k series held a forced
// collection took three times as long as with 100k explicit histograms.
//
// While a point is applied the state is worked on as an expState whose
// bucket slices alias the series' arena blocks (load); what outgrew its
// block is moved into a larger one when the state is written back
// (save). Blocks come in power-of-two sizes, so a series whose span
// grows moves a few times and then stays, and freed blocks are reused by
// size.

// expRow is the stored state of one exponential histogram series; it must
// not hold pointers.
type expRow struct {
	zeroThresh float64
	population uint64 // zero count plus all bucket counts
	zeroCount  uint64
	start      int64 // start timestamp of the held state, unix nanoseconds
	pos, neg   expSide
	scale      int32
	hasSum     bool
	used       bool // the row holds exponential histogram state
}

// expSide is where one side's buckets are: OTLP offset, n counts used of a
// block of size counts at (chunk, off) in the slab's expArena.
type expSide struct {
	offset     int32
	n, size    uint32
	chunk, off uint32
}

// expArena holds the bucket counts of exponential histogram series.
// Blocks of up to expChunk counts are cut from shared chunks (power-of-two
// sizes fill them exactly); a larger block, which only a cumulative point
// with that many buckets brings, gets a chunk of its own, unmapped when it
// is freed.
type expArena struct {
	chunks []mem.Chunk[uint64]
	fill   int                 // the chunk blocks are cut from, plus one; 0 for none
	used   int                 // counts used in it
	freed  map[uint32][]uint64 // block size → chunk<<32 | off of freed blocks
	spare  []uint32            // chunk slots emptied by freeing a large block
}

// expChunk is the arena chunk, in counts.
const expChunk = 1 << 16

// expBlockMin is the smallest block: a side that holds a few buckets
// usually holds a few more soon.
const expBlockMin = 8

// expBlockSize is the block size for n counts.
func expBlockSize(n int) uint32 {
	if n <= expBlockMin {
		return expBlockMin
	}
	return 1 << bits.Len64(uint64(n-1))
}

// alloc returns the place of a block of size counts (from expBlockSize).
func (a *expArena) alloc(size uint32) (chunk, off uint32) {
	if size > expChunk {
		c := mem.NewChunk[uint64](int(size))
		if n := len(a.spare); n > 0 {
			chunk = a.spare[n-1]
			a.spare = a.spare[:n-1]
			a.chunks[chunk] = c
		} else {
			chunk = uint32(len(a.chunks))
			a.chunks = append(a.chunks, c)
		}
		return chunk, 0
	}
	if list := a.freed[size]; len(list) > 0 {
		p := list[len(list)-1]
		a.freed[size] = list[:len(list)-1]
		return uint32(p >> 32), uint32(p)
	}
	if a.fill == 0 || a.used+int(size) > expChunk {
		a.chunks = append(a.chunks, mem.NewChunk[uint64](expChunk))
		a.fill, a.used = len(a.chunks), 0
	}
	off = uint32(a.used)
	a.used += int(size)
	return uint32(a.fill - 1), off
}

// block returns a side's whole block; nil when it has none.
func (a *expArena) block(sd *expSide) []uint64 {
	if sd.size == 0 {
		return nil
	}
	return a.chunks[sd.chunk].Values[sd.off : sd.off+sd.size : sd.off+sd.size]
}

// free gives a side's block back. A reused block keeps stale counts past
// the n a side uses, which nothing reads: growing in place clears them.
func (a *expArena) free(sd *expSide) {
	switch {
	case sd.size == 0:
	case sd.size > expChunk:
		a.chunks[sd.chunk].Free()
		a.spare = append(a.spare, sd.chunk)
	default:
		if a.freed == nil {
			a.freed = map[uint32][]uint64{}
		}
		a.freed[sd.size] = append(a.freed[sd.size], uint64(sd.chunk)<<32|uint64(sd.off))
	}
	sd.size, sd.chunk, sd.off = 0, 0, 0
}

// release gives every chunk back; the arena is empty afterwards.
func (a *expArena) release() {
	for i := range a.chunks {
		a.chunks[i].Free()
	}
	*a = expArena{}
}

// expSlab holds the state of the exponential histogram rows: a slot per
// row in chunks indexed like the rows, mapped when first needed, and the
// buckets of both sides in the arena.
type expSlab struct {
	rows []mem.Chunk[expRow]
	bkts expArena
}

// rowOf returns the state slot of row id, mapping its chunk when it is the
// first exponential histogram row there.
func (x *expSlab) rowOf(id uint32) *expRow {
	c := int(id / rowChunk)
	for len(x.rows) <= c {
		x.rows = append(x.rows, mem.Chunk[expRow]{})
	}
	if x.rows[c].Values == nil {
		x.rows[c] = mem.NewChunk[expRow](rowChunk)
	}
	return &x.rows[c].Values[id%rowChunk]
}

// held returns row id's state, nil when it holds none.
func (x *expSlab) held(id uint32) *expRow {
	c := int(id / rowChunk)
	if c >= len(x.rows) || x.rows[c].Values == nil {
		return nil
	}
	if e := &x.rows[c].Values[id%rowChunk]; e.used {
		return e
	}
	return nil
}

// load returns the working form of a stored state; its bucket slices
// alias the arena and are valid until the next save or free.
func (x *expSlab) load(e *expRow) expState {
	return expState{
		scale: e.scale, zeroThresh: e.zeroThresh, population: e.population, hasSum: e.hasSum,
		zeroCount: e.zeroCount, start: e.start,
		pos: expBuckets{offset: e.pos.offset, counts: x.bkts.block(&e.pos)[:e.pos.n]},
		neg: expBuckets{offset: e.neg.offset, counts: x.bkts.block(&e.neg)[:e.neg.n]},
	}
}

// save writes a working state back into e, moving a side that outgrew
// its block into a larger one.
func (x *expSlab) save(e *expRow, st *expState) {
	e.scale, e.zeroThresh, e.population, e.hasSum = st.scale, st.zeroThresh, st.population, st.hasSum
	e.zeroCount, e.start, e.used = st.zeroCount, st.start, true
	x.place(&e.pos, &st.pos)
	x.place(&e.neg, &st.neg)
}

func (x *expSlab) place(sd *expSide, b *expBuckets) {
	sd.offset, sd.n = b.offset, uint32(len(b.counts))
	if len(b.counts) == 0 {
		return
	}
	if blk := x.bkts.block(sd); blk != nil && unsafe.SliceData(blk) == unsafe.SliceData(b.counts) {
		return // still in its block
	}
	x.bkts.free(sd)
	sd.size = expBlockSize(len(b.counts))
	sd.chunk, sd.off = x.bkts.alloc(sd.size)
	copy(x.bkts.block(sd), b.counts)
}

// reserve makes b's block hold at least n counts, dropping what it held:
// set then copies a point's side without growing onto the heap.
func (x *expSlab) reserve(sd *expSide, b *expBuckets, n int) {
	if n <= int(sd.size) {
		return
	}
	x.bkts.free(sd)
	sd.size = expBlockSize(n)
	sd.chunk, sd.off = x.bkts.alloc(sd.size)
	b.counts = x.bkts.block(sd)[:0]
}

// free drops row id's state and gives its blocks back.
func (x *expSlab) free(id uint32) {
	e := x.held(id)
	if e == nil {
		return
	}
	x.bkts.free(&e.pos)
	x.bkts.free(&e.neg)
	*e = expRow{}
}

// release unmaps every exponential histogram state and bucket.
func (x *expSlab) release() {
	for i := range x.rows {
		x.rows[i].Free()
	}
	x.rows = nil
	x.bkts.release()
}
