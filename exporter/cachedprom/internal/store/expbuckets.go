package store // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"

import (
	"math"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// This file keeps the buckets of exponential histogram series, which the
// protobuf exposition serves as native histograms, and adds
// delta points the way the contrib prometheus exporter's accumulator does:
// both sides brought to the smaller scale, the zero bucket widened to the
// larger zero threshold (buckets entirely under it join the zero count), the
// counts of equal indexes summed.
//
// The buckets are stored off the heap (expslab.go); these functions work on
// a series' state while a point is applied, its slices aliasing the stored
// blocks.

// expState is what an exponential histogram needs besides count and sum.
// The text formats show only those, but validity decides whether it is
// shown at all; the protobuf exposition shows the buckets too. It is the
// working form while a point is applied or a row copied: the store keeps it
// as an expRow (expslab.go).
type expState struct {
	scale      int32
	zeroThresh float64
	population uint64 // zero count plus all bucket counts
	hasSum     bool
	zeroCount  uint64
	start      int64 // start timestamp of the held state, unix nanoseconds
	pos, neg   expBuckets
}

// expBuckets is one side of an exponential histogram: counts[i] is the
// count of OTLP bucket offset+i.
type expBuckets struct {
	offset int32
	counts []uint64
}

// minScale is the smallest native histogram schema: no exposition shows an
// exponential histogram of a lower scale (the text formats hide the series,
// as client_golang refuses it, and the protobuf body has no schema for it).
const minScale = -4

// maxExpBuckets bounds the dense bucket span of one side of a series. Two
// deltas with far apart indexes would otherwise need a slice spanning both;
// past the bound the histogram is downscaled further (halving the span each
// step), as OTLP SDKs do when a histogram outgrows its maximum size.
const maxExpBuckets = 1 << 14

// set copies one side of a point into b's slice, reusing its capacity (AsRaw would allocate a
// copy of its own for every point).
func (b *expBuckets) set(src pmetric.ExponentialHistogramDataPointBuckets) {
	b.offset = src.Offset()
	b.counts = b.counts[:0]
	for _, c := range src.BucketCounts().All() {
		b.counts = append(b.counts, c)
	}
}

// downscale merges 2^by adjacent buckets into one, as the scale decreases by
// by: index i becomes i >> by (floor, negative indexes too).
func (b *expBuckets) downscale(by int32) {
	if by <= 0 || len(b.counts) == 0 {
		return
	}
	first := int64(b.offset) >> by
	out := b.counts[:0]
	for i, c := range b.counts {
		k := int(((int64(b.offset) + int64(i)) >> by) - first)
		if k == len(out) {
			out = append(out, c) // k <= i: out never overtakes the input
		} else {
			out[k] += c
		}
	}
	b.offset, b.counts = int32(first), out
}

// dropBelow moves the buckets whose upper bound is at most threshold into
// the zero count, which it returns. Only the lowest buckets of a side can
// lie under it, so the positive side is cut from its start; the negative
// side mirrors it (bucket i covers [-base^(i+1), -base^i)), so the same
// indexes go.
func (b *expBuckets) dropBelow(scale int32, threshold float64) uint64 {
	if threshold <= 0 {
		return 0
	}
	var moved uint64
	n := 0
	for n < len(b.counts) && expUpperBound(scale, int64(b.offset)+int64(n)) <= threshold {
		moved += b.counts[n]
		n++
	}
	if n > 0 {
		b.counts = append(b.counts[:0], b.counts[n:]...)
		b.offset += int32(n)
		if len(b.counts) == 0 {
			b.offset = 0
		}
	}
	return moved
}

// expUpperBound is the upper bound of OTLP bucket index at scale:
// base^(index+1), base = 2^(2^-scale).
func expUpperBound(scale int32, index int64) float64 {
	return math.Exp2(math.Ldexp(float64(index+1), -int(scale)))
}

// add adds a point's side, both at the same scale.
func (b *expBuckets) add(src expBuckets) {
	if len(src.counts) == 0 {
		return
	}
	if len(b.counts) == 0 {
		b.offset = src.offset
		b.counts = append(b.counts[:0], src.counts...)
		return
	}
	lo := min(int64(b.offset), int64(src.offset))
	hi := max(int64(b.offset)+int64(len(b.counts)), int64(src.offset)+int64(len(src.counts)))
	if lo < int64(b.offset) || hi > int64(b.offset)+int64(len(b.counts)) {
		var grown []uint64
		if hi-lo <= int64(cap(b.counts)) {
			// Grown in place, within the block: what lies past the
			// held counts there is stale.
			n, at := len(b.counts), int64(b.offset)-lo
			grown = b.counts[:hi-lo]
			copy(grown[at:], b.counts[:n])
			clear(grown[:at])
			clear(grown[at+int64(n):])
		} else {
			grown = make([]uint64, hi-lo)
			copy(grown[int64(b.offset)-lo:], b.counts)
		}
		b.offset, b.counts = int32(lo), grown
	}
	for i, c := range src.counts {
		b.counts[int64(src.offset)-int64(b.offset)+int64(i)] += c
	}
}

// span is the number of buckets the union of two sides would cover.
func span(a, b expBuckets) int64 {
	switch {
	case len(a.counts) == 0:
		return int64(len(b.counts))
	case len(b.counts) == 0:
		return int64(len(a.counts))
	}
	lo := min(int64(a.offset), int64(b.offset))
	hi := max(int64(a.offset)+int64(len(a.counts)), int64(b.offset)+int64(len(b.counts)))
	return hi - lo
}

// setBuckets replaces the held buckets with a point's.
func (st *expState) setBuckets(dp pmetric.ExponentialHistogramDataPoint) {
	st.zeroCount = dp.ZeroCount()
	st.start = int64(dp.StartTimestamp())
	st.pos.set(dp.Positive())
	st.neg.set(dp.Negative())
}

// addBuckets adds a delta point's buckets to the held ones; st.scale and
// st.zeroThresh still describe the held state. scratch holds the point's two
// sides meanwhile: the store's, so that adding a delta allocates nothing once
// the held buckets cover it.
func (st *expState) addBuckets(dp pmetric.ExponentialHistogramDataPoint, scratch *[2]expBuckets) {
	pos, neg := &scratch[0], &scratch[1]
	pos.set(dp.Positive())
	neg.set(dp.Negative())
	scale := min(st.scale, dp.Scale())
	st.pos.downscale(st.scale - scale)
	st.neg.downscale(st.scale - scale)
	pos.downscale(dp.Scale() - scale)
	neg.downscale(dp.Scale() - scale)
	for span(st.pos, *pos) > maxExpBuckets || span(st.neg, *neg) > maxExpBuckets {
		scale--
		for _, b := range []*expBuckets{&st.pos, &st.neg, pos, neg} {
			b.downscale(1)
		}
	}
	zt := max(st.zeroThresh, dp.ZeroThreshold())
	zero := st.zeroCount + dp.ZeroCount()
	if zt > st.zeroThresh {
		zero += st.pos.dropBelow(scale, zt) + st.neg.dropBelow(scale, zt)
	}
	if zt > dp.ZeroThreshold() {
		zero += pos.dropBelow(scale, zt) + neg.dropBelow(scale, zt)
	}
	st.pos.add(*pos)
	st.neg.add(*neg)
	st.scale, st.zeroThresh, st.zeroCount = scale, zt, zero
	if s := int64(dp.StartTimestamp()); st.start == 0 || s != 0 && s < st.start {
		st.start = s
	}
}
