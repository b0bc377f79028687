package series // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

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
	MaxExponentialSize = 16384
	// ZeroCode marks a zero duration in an observation (go-expohisto's zero bucket).
	ZeroCode = math.MinInt32
)

// ExpoSketch is the bucket part of an exponential histogram: counts[0:n] of a segment of a
// shared slab hold the buckets start..start+n-1 at scale. Slots n..cap-1 are always zero.
// It holds no pointer, so millions of them cost the GC nothing.
type ExpoSketch struct {
	off   uint32 // segment offset in the slab
	cap   int32
	n     int32
	start int32
	scale int32
}

// Slab is bump-allocated storage for sketch segments. Segments that are outgrown or freed
// become garbage counted in waste; the owner compacts when waste dominates.
type Slab struct {
	buf   []uint64
	waste int
}

func (s *Slab) alloc(n int32) uint32 {
	off := len(s.buf)
	if off+int(n) > math.MaxUint32 {
		panic("BUG: tracemetrics: exponential histogram slab over 4G buckets")
	}
	s.buf = append(s.buf, make([]uint64, n)...)
	return uint32(off)
}

// WantsCompaction reports whether the segments freed or outgrown outweigh the live ones (and
// are worth the copy).
func (s *Slab) WantsCompaction() bool { return s.waste > 1<<20 && s.waste > len(s.buf)/2 }

// Compact copies the live segments of states' sketches into a new slab and returns it.
func (s *Slab) Compact(states []ExpoState) Slab {
	var fresh Slab
	for id := range states {
		k := &states[id].Sketch
		if k.cap == 0 {
			continue
		}
		off := fresh.alloc(k.cap)
		copy(fresh.buf[off:], s.buf[k.off:k.off+uint32(k.cap)])
		k.off = off
	}
	return fresh
}

// Reset empties the slab, keeping its memory.
func (s *Slab) Reset() {
	s.buf = s.buf[:0]
	s.waste = 0
}

// Scale is the sketch's scale.
func (k *ExpoSketch) Scale() int32 { return k.scale }

// Positive returns the sketch's buckets, held in s: the index of the first and the counts.
func (k *ExpoSketch) Positive(s *Slab) (offset int32, counts []uint64) {
	if k.n == 0 {
		return 0, nil
	}
	return k.start, k.counts(s)[:k.n]
}

func (k *ExpoSketch) counts(s *Slab) []uint64 {
	return s.buf[k.off : k.off+uint32(k.cap)]
}

// Free returns the sketch's segment as waste and empties it.
func (k *ExpoSketch) Free(s *Slab) {
	if k.cap > 0 {
		clear(k.counts(s)[:k.n])
		s.waste += int(k.cap)
	}
	*k = ExpoSketch{}
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

// Add counts c observations whose scale-20 index is idx20.
func (k *ExpoSketch) Add(s *Slab, idx20 int32, c uint64, maxSize int32) {
	// Most observations land in a bucket the sketch already covers (never when it is empty:
	// n is 0).
	if p := idx20>>(expoMaxScale-k.scale) - k.start; uint32(p) < uint32(k.n) {
		s.buf[k.off+uint32(p)] += c
		return
	}
	k.addSlow(s, idx20, c, maxSize)
}

// addSlow is add when the sketch is empty or the bucket is outside its range.
func (k *ExpoSketch) addSlow(s *Slab, idx20 int32, c uint64, maxSize int32) {
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

// Merge adds the buckets of o (held in os) to k.
func (k *ExpoSketch) Merge(s *Slab, o *ExpoSketch, os *Slab, maxSize int32) {
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
func (k *ExpoSketch) downscale(s *Slab, by int32) {
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
func (k *ExpoSketch) extend(s *Slab, lo, hi, maxSize int32) {
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
func (k *ExpoSketch) grow(s *Slab, size, maxSize, shift int32) {
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

// ExpoState is the exponential histogram part of a series, kept only when the duration
// histogram is exponential.
type ExpoState struct {
	Zero     uint64 // zero durations
	Min, Max float64
	Sketch   ExpoSketch
}

// NewExpoState returns the state of a histogram without observations.
func NewExpoState() ExpoState { return ExpoState{Min: math.Inf(1), Max: math.Inf(-1)} }
