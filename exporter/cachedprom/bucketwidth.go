package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"math"
	"unsafe"
)

// A series' bucket counts are stored 32 bits wide until one of them needs
// more. They are the largest part of a histogram series (17 counts with
// tracemetrics' default buckets: 136 bytes at 64 bits, 68 at 32), and a
// cumulative bucket passes 2^32 only after billions of observations. The
// first count that does not fit turns the row wide (rowWide) for as long
// as it keeps its layout: its counts move to a 64-bit block, with nothing
// lost. Narrow blocks come from the same arena, two counts per slot.

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

// loadBuckets appends row r's bucket counts to dst.
func (s *seriesStore) loadBuckets(dst []uint64, r *seriesRow) []uint64 {
	if r.flags&rowWide != 0 {
		return append(dst, s.buckets.slice(r.bkt, r.nbkt)...)
	}
	for _, c := range s.buckets.narrowCounts(r.bkt, r.nbkt) {
		dst = append(dst, uint64(c))
	}
	return dst
}

// storeBuckets writes counts, one per bucket of row r, widening the row
// when a count needs 64 bits.
func (s *seriesStore) storeBuckets(r *seriesRow, counts []uint64) {
	if r.flags&rowWide == 0 {
		for _, c := range counts {
			if c > math.MaxUint32 {
				s.buckets.free(r.bkt, bucketBlock(r.nbkt, false))
				r.bkt = s.buckets.alloc(r.nbkt)
				r.flags |= rowWide
				break
			}
		}
	}
	if r.flags&rowWide != 0 {
		copy(s.buckets.slice(r.bkt, r.nbkt), counts)
		return
	}
	dst := s.buckets.narrowCounts(r.bkt, r.nbkt)
	for i, c := range counts {
		dst[i] = uint32(c)
	}
}

// allocBuckets gives row r a narrow block of n zero counts in place of the
// block it held.
func (s *seriesStore) allocBuckets(r *seriesRow, n uint32) {
	s.freeBuckets(r)
	r.bkt, r.nbkt = s.buckets.alloc(bucketBlock(n, false)), n
	clear(s.buckets.narrowCounts(r.bkt, n))
}

// freeBuckets returns row r's block to the arena.
func (s *seriesStore) freeBuckets(r *seriesRow) {
	if r.nbkt > 0 {
		s.buckets.free(r.bkt, bucketBlock(r.nbkt, r.flags&rowWide != 0))
	}
	r.bkt, r.nbkt = 0, 0
	r.flags &^= rowWide
}
