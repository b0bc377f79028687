package store // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"

import (
	"math"
	"unsafe"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/mem"
)

// bucketArena holds the bucket counts of every explicit histogram series in
// large pointer-free chunks; a series keeps an offset, not a slice.
//
// A series' bucket counts are stored 32 bits wide until one of them needs
// more. They are the largest part of a histogram series (17 counts with
// tracemetrics' default buckets: 136 bytes at 64 bits, 68 at 32), and a
// cumulative bucket passes 2^32 only after billions of observations. The
// first count that does not fit turns the row wide (rowWide) for as long
// as it keeps its layout: its counts move to a 64-bit block, with nothing
// lost. Narrow blocks come from the same arena, two counts per slot.
type bucketArena struct {
	chunks []mem.Chunk[uint64]
	used   int                 // entries used in the last chunk
	freed  map[uint32][]uint32 // block size → offsets of freed blocks
}

// bucketChunk is the arena chunk, in counts; a block never spans chunks.
const bucketChunk = 1 << 16

// alloc returns the offset of a block of n counts (n <= bucketChunk).
func (a *bucketArena) alloc(n uint32) uint32 {
	if n == 0 {
		return 0
	}
	if list := a.freed[n]; len(list) > 0 {
		off := list[len(list)-1]
		a.freed[n] = list[:len(list)-1]
		return off
	}
	if len(a.chunks) == 0 || a.used+int(n) > bucketChunk {
		a.chunks = append(a.chunks, mem.NewChunk[uint64](bucketChunk))
		a.used = 0
	}
	off := uint32(len(a.chunks)-1)*bucketChunk + uint32(a.used)
	a.used += int(n)
	return off
}

func (a *bucketArena) slice(off, n uint32) []uint64 {
	if n == 0 {
		return nil
	}
	c := a.chunks[off/bucketChunk].Values
	start := off % bucketChunk
	return c[start : start+n : start+n]
}

// release gives every chunk back; the arena is empty afterwards.
func (a *bucketArena) release() {
	for i := range a.chunks {
		a.chunks[i].Free()
	}
	*a = bucketArena{}
}

func (a *bucketArena) free(off, n uint32) {
	if a.freed == nil {
		a.freed = map[uint32][]uint32{}
	}
	a.freed[n] = append(a.freed[n], off)
}

// mapped is what the chunks map outside the heap.
func (a *bucketArena) mapped() int {
	n := 0
	for i := range a.chunks {
		n += a.chunks[i].Mapped()
	}
	return n
}

// bucketBlock is the arena length of a row's block of n counts.
func bucketBlock(n uint32, wide bool) uint32 {
	if wide {
		return n
	}
	return (n + 1) / 2
}

// narrowCounts views a narrow block of n counts.
func (a *bucketArena) narrowCounts(off, n uint32) []uint32 {
	b := a.slice(off, bucketBlock(n, false))
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// load appends row r's bucket counts to dst.
func (a *bucketArena) load(dst []uint64, r *seriesRow) []uint64 {
	if r.flags&rowWide != 0 {
		return append(dst, a.slice(r.bkt, r.nbkt)...)
	}
	for _, c := range a.narrowCounts(r.bkt, r.nbkt) {
		dst = append(dst, uint64(c))
	}
	return dst
}

// store writes counts, one per bucket of row r, widening the row when a
// count needs 64 bits.
func (a *bucketArena) store(r *seriesRow, counts []uint64) {
	if r.flags&rowWide == 0 {
		for _, c := range counts {
			if c > math.MaxUint32 {
				a.free(r.bkt, bucketBlock(r.nbkt, false))
				r.bkt = a.alloc(r.nbkt)
				r.flags |= rowWide
				break
			}
		}
	}
	if r.flags&rowWide != 0 {
		copy(a.slice(r.bkt, r.nbkt), counts)
		return
	}
	dst := a.narrowCounts(r.bkt, r.nbkt)
	for i, c := range counts {
		dst[i] = uint32(c)
	}
}

// allocRow gives row r a narrow block of n zero counts in place of the
// block it held.
func (a *bucketArena) allocRow(r *seriesRow, n uint32) {
	a.freeRow(r)
	r.bkt, r.nbkt = a.alloc(bucketBlock(n, false)), n
	clear(a.narrowCounts(r.bkt, n))
}

// freeRow returns row r's block to the arena.
func (a *bucketArena) freeRow(r *seriesRow) {
	if r.nbkt > 0 {
		a.free(r.bkt, bucketBlock(r.nbkt, r.flags&rowWide != 0))
	}
	r.bkt, r.nbkt = 0, 0
	r.flags &^= rowWide
}
