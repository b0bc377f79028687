package render // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"

import (
	"math"
	"sync"

	"github.com/prometheus/prometheus/model/histogram"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"
)

// This file renders an exponential histogram as a classic histogram for
// the text formats, when native_histograms.classic_fallback is set: one
// `le` bucket per bucket of the native histogram the protobuf body serves
// for it (native.go: the scale, reduced to 8 at most, is the schema),
// at the schema's own boundaries, with the cumulative counts those buckets
// give. A text client then sees what a native histogram client sees, in
// the classic form; histogram_quantile over these buckets and over the
// native histogram interpolate within the same buckets.
//
// The buckets, in increasing `le` order:
//   - each negative bucket, from the most negative: Prometheus bucket k
//     holds [-b^k, -b^(k-1)), so its `le` is -b^(k-1); a value exactly on
//     a negative boundary is counted in the bucket above it, the
//     exposition's only inexact count, and only for negative values;
//   - the zero bucket at its threshold (0 when the threshold is 0: exact
//     zeros), with every negative value and the zero count below it;
//   - each positive bucket k, (b^(k-1), b^k], at `le` b^k;
//   - +Inf at the count.
//
// Every bucket of the point's range is written, empty ones included, so a
// series' `le` set changes only when its range grows or its scale falls
// (a delta merged at a smaller scale). A positive bucket whose bound is at
// most the zero threshold (which OTLP points should not have) is counted
// in the zero bucket's line, and a bound that overflows float64 in the
// +Inf line, so `le` values only increase.

// nativeBoundFracs holds, per schema 1..8, the fractions in [0.5, 1) that
// Prometheus' bucket bounds are built from (getBoundExponential in
// prometheus/model/histogram). They are read once from Prometheus' own
// bucket iterator, so that these `le` values are exactly the bounds
// Prometheus gives the native histogram's buckets: 2^(k/2^schema) computed
// here differs from its table in the last bit for most indexes.
var nativeBoundFracs = sync.OnceValue(func() [][]float64 {
	fracs := make([][]float64, nativeSchemaMax+1)
	for schema := int32(1); schema <= nativeSchemaMax; schema++ {
		n := int32(1) << schema
		h := &histogram.FloatHistogram{
			Schema: schema, Count: float64(n),
			PositiveSpans:   []histogram.Span{{Offset: 0, Length: uint32(n)}},
			PositiveBuckets: make([]float64, n),
		}
		for i := range h.PositiveBuckets {
			h.PositiveBuckets[i] = 1
		}
		fracs[schema] = make([]float64, n)
		for it := h.PositiveBucketIterator(); it.Next(); {
			// Bucket k in [0, 2^schema) has the upper bound frac[k] × 2^1.
			b := it.At()
			fracs[schema][b.Index] = b.Upper / 2
		}
	}
	return fracs
})

// nativeBound is the upper bound of Prometheus bucket idx at schema, as
// Prometheus computes it (+Inf past float64).
func nativeBound(idx int64, schema int32) float64 {
	if schema <= 0 {
		exp := idx << -schema
		if exp > 1024 {
			return math.Inf(1)
		}
		return math.Ldexp(1, int(exp))
	}
	frac := nativeBoundFracs()[schema][idx&(1<<schema-1)]
	return math.Ldexp(frac, int(idx>>schema)+1)
}

// classic renders exponential histograms as classic ones; it owns the
// scratch of one row's buckets.
type classic struct {
	posBuf, negBuf []expBucketCount
}

// expBucketCount is one Prometheus bucket of a side.
type expBucketCount struct {
	idx   int64
	count uint64
}

// append writes an exponential histogram row, copied with its native
// layout, as classic `_bucket` lines, then `_sum` and `_count`.
func (c *classic) append(dst []byte, w *lines, f *store.Frame, name string, labels []byte, r *store.Row, om bool) []byte {
	n, pos, neg := f.Native(r)
	schema, shift := n.Scale, uint(0)
	if schema > nativeSchemaMax {
		schema, shift = nativeSchemaMax, uint(schema-nativeSchemaMax)
	}
	side := func(counts []uint64) func(int) uint64 { return func(i int) uint64 { return counts[i] } }

	var cum uint64
	line := func(le float64) {
		dst = appendSampleStart(dst, name, "_bucket", labels, w.floatLabel(`le="`, le, om))
		dst = w.appendCount(dst, cum, om)
		dst = w.appendTimestamp(dst, r.TS, om)
		dst = append(dst, '\n')
	}

	// Negative buckets from the most negative: the side's indexes in
	// decreasing order.
	c.negBuf = c.negBuf[:0]
	eachNativeBucket(n.NegOffset, len(neg), side(neg), shift, func(idx int64, count uint64) bool {
		c.negBuf = append(c.negBuf, expBucketCount{idx, count})
		return true
	})
	for i := len(c.negBuf) - 1; i >= 0; i-- {
		cum += c.negBuf[i].count
		// A bound beyond float64's range (or so small it rounds to 0)
		// cannot be written in order: its count goes to the next line.
		if le := -nativeBound(c.negBuf[i].idx-1, schema); le < 0 && !math.IsInf(le, -1) {
			line(le)
		}
	}
	// The zero bucket, with the positive buckets at or below its threshold.
	cum += n.ZeroCount
	zt := n.ZeroThresh
	c.posBuf = c.posBuf[:0]
	eachNativeBucket(n.PosOffset, len(pos), side(pos), shift, func(idx int64, count uint64) bool {
		if nativeBound(idx, schema) <= zt {
			cum += count
		} else {
			c.posBuf = append(c.posBuf, expBucketCount{idx, count})
		}
		return true
	})
	line(zt)
	for _, b := range c.posBuf {
		le := nativeBound(b.idx, schema)
		if math.IsInf(le, 1) {
			break // counted in +Inf
		}
		cum += b.count
		line(le)
	}
	dst = appendSampleStart(dst, name, "_bucket", labels, `le="+Inf"}`)
	dst = w.appendCount(dst, r.Count, om)
	dst = w.appendTimestamp(dst, r.TS, om)
	dst = append(dst, '\n')
	return w.appendSumCount(dst, name, labels, r, om)
}
