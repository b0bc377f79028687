package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import "math"

// Exponential histograms follow the OpenTelemetry base-2 exponential mapping exactly as
// lightstep/go-expohisto (spanmetrics' implementation) does: the index of a value at scale 20
// is go-expohisto's logarithm mapping's (expoindex.go), and the index at a lower scale s is that
// index shifted right by 20-s, which is what go-expohisto's downscaling does to counts it holds.
// The scale of a histogram is the largest one (at most 20) at which its non-zero values fit in
// max_size buckets, so it does not depend on the order of the values, and merging two
// histograms gives what observing all their values one by one gives.

const (
	expoMaxScale       = 20
	expoMinScale       = -10
	maxExponentialSize = 16384
	// zeroCode marks a zero duration in an observation (go-expohisto's zero bucket).
	zeroCode = math.MinInt32
)

// expoSketch is the bucket part of an exponential histogram: counts[0:n] of a segment of a
// shared slab hold the buckets start..start+n-1 at scale. Slots n..cap-1 are always zero.
// It holds no pointer, so millions of them cost the GC nothing.
type expoSketch struct {
	off   uint32 // segment offset in the slab
	cap   int32
	n     int32
	start int32
	scale int32
}

// slab is bump-allocated storage for sketch segments. Segments that are outgrown or freed
// become garbage counted in waste; the owner compacts when waste dominates.
type slab struct {
	buf   []uint64
	waste int
}

func (s *slab) alloc(n int32) uint32 {
	off := len(s.buf)
	if off+int(n) > math.MaxUint32 {
		panic("BUG: tracemetrics: exponential histogram slab over 4G buckets")
	}
	s.buf = append(s.buf, make([]uint64, n)...)
	return uint32(off)
}

func (s *slab) reset() {
	s.buf = s.buf[:0]
	s.waste = 0
}

func (k *expoSketch) counts(s *slab) []uint64 {
	return s.buf[k.off : k.off+uint32(k.cap)]
}

// free returns the sketch's segment as waste and empties it.
func (k *expoSketch) free(s *slab) {
	if k.cap > 0 {
		clear(k.counts(s)[:k.n])
		s.waste += int(k.cap)
	}
	*k = expoSketch{}
}

func changeScale(hi, lo, maxSize int32) int32 {
	var change int32
	for hi-lo >= maxSize {
		hi >>= 1
		lo >>= 1
		change++
	}
	return change
}

// add counts c observations whose scale-20 index is idx20.
func (k *expoSketch) add(s *slab, idx20 int32, c uint64, maxSize int32) {
	// Most observations land in a bucket the sketch already covers (never when it is empty:
	// n is 0).
	if p := idx20>>(expoMaxScale-k.scale) - k.start; uint32(p) < uint32(k.n) {
		s.buf[k.off+uint32(p)] += c
		return
	}
	k.addSlow(s, idx20, c, maxSize)
}

// addSlow is add when the sketch is empty or the bucket is outside its range.
func (k *expoSketch) addSlow(s *slab, idx20 int32, c uint64, maxSize int32) {
	if k.n == 0 {
		k.scale = expoMaxScale
	}
	idx := idx20 >> (expoMaxScale - k.scale)
	lo, hi := idx, idx
	if k.n > 0 {
		lo, hi = min(k.start, idx), max(k.start+k.n-1, idx)
		if hi-lo >= maxSize {
			k.downscale(s, changeScale(hi, lo, maxSize))
			idx = idx20 >> (expoMaxScale - k.scale)
			lo, hi = min(k.start, idx), max(k.start+k.n-1, idx)
		}
	}
	k.extend(s, lo, hi, maxSize)
	k.counts(s)[idx-k.start] += c
}

// merge adds the buckets of o (held in os) to k.
func (k *expoSketch) merge(s *slab, o *expoSketch, os *slab, maxSize int32) {
	if o.n == 0 {
		return
	}
	if k.n == 0 {
		k.scale = o.scale
	}
	target := min(k.scale, o.scale)
	ol, oh := o.start>>(o.scale-target), (o.start+o.n-1)>>(o.scale-target)
	lo, hi := ol, oh
	if k.n > 0 {
		kl, kh := k.start>>(k.scale-target), (k.start+k.n-1)>>(k.scale-target)
		lo, hi = min(lo, kl), max(hi, kh)
	}
	target -= changeScale(hi, lo, maxSize)
	if k.n > 0 {
		k.downscale(s, k.scale-target)
	} else {
		k.scale = target
	}
	shift := o.scale - target
	lo, hi = o.start>>shift, (o.start+o.n-1)>>shift
	if k.n > 0 {
		lo, hi = min(lo, k.start), max(hi, k.start+k.n-1)
	}
	k.extend(s, lo, hi, maxSize)
	dst := k.counts(s)
	for p, c := range o.counts(os)[:o.n] {
		if c != 0 {
			dst[((o.start+int32(p))>>shift)-k.start] += c
		}
	}
}

// downscale lowers the scale by `by`, merging neighbouring buckets in place.
func (k *expoSketch) downscale(s *slab, by int32) {
	if by <= 0 {
		return
	}
	if k.scale-by < expoMinScale {
		by = k.scale - expoMinScale
	}
	c := k.counts(s)
	newStart := k.start >> by
	for p := int32(0); p < k.n; p++ {
		q := ((k.start + p) >> by) - newStart
		if q != p {
			c[q] += c[p]
			c[p] = 0
		}
	}
	k.n = ((k.start + k.n - 1) >> by) - newStart + 1
	k.start = newStart
	k.scale -= by
}

// extend makes the segment cover buckets lo..hi (hi-lo < maxSize) at the current scale.
func (k *expoSketch) extend(s *slab, lo, hi, maxSize int32) {
	size := hi - lo + 1
	if k.n == 0 {
		if k.cap < size {
			k.grow(s, size, maxSize, 0)
		}
		k.start, k.n = lo, size
		return
	}
	shift := k.start - lo // > 0 when the range grows downwards
	if size > k.cap {
		k.grow(s, size, maxSize, shift)
	} else if shift > 0 {
		c := k.counts(s)
		copy(c[shift:shift+k.n], c[:k.n])
		clear(c[:min(shift, k.n)])
	}
	k.start, k.n = lo, size
}

// grow moves the sketch to a new segment of at least size slots, its counts shifted by shift.
func (k *expoSketch) grow(s *slab, size, maxSize, shift int32) {
	c := int32(4)
	for c < size {
		c *= 2
	}
	c = min(c, max(maxSize, size))
	off := s.alloc(c)
	if k.cap > 0 {
		old := s.buf[k.off : k.off+uint32(k.n)]
		copy(s.buf[off+uint32(shift):], old)
		clear(old)
		s.waste += int(k.cap)
	}
	k.off, k.cap = off, c
}

// expoState is the exponential histogram part of a series, kept only when the duration
// histogram is exponential.
type expoState struct {
	zero     uint64 // zero durations
	min, max float64
	sketch   expoSketch
}

func newExpoState() expoState { return expoState{min: math.Inf(1), max: math.Inf(-1)} }
