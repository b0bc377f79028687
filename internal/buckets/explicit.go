// Package buckets finds the explicit histogram bucket of a value in constant time, exactly as a
// binary search over the bounds would: the duration histograms of tracemetrics and the latency
// histograms of tracegraph observe every span through it.
package buckets // import "github.com/otelcol-red/otelcol-red/internal/buckets"

import (
	"math"
	"sort"
)

// Explicit finds the bucket of a value in O(1): a table indexed by the top 16 bits of
// the value's float64 representation (sign, exponent and 4 mantissa bits: cells about 6% wide)
// gives the first candidate bound, and a short forward scan (usually 0 or 1 step) finishes.
// The answer is exactly sort.SearchFloat64s(bounds, v), spanmetrics' binary search: the
// smallest i with bounds[i] >= v, so a value equal to a bound falls into that bound's bucket.
type Explicit struct {
	bounds    []float64
	firstCell int
	table     []uint16
	fallback  bool // bounds the table cannot serve (non-positive, or too many)
}

// NewExplicit indexes bounds, sorted ascending; it keeps the slice.
func NewExplicit(bounds []float64) *Explicit {
	e := &Explicit{bounds: bounds}
	if len(bounds) == 0 || len(bounds) >= math.MaxUint16 || !(bounds[0] > 0) || math.IsInf(bounds[len(bounds)-1], 1) {
		e.fallback = true
		return e
	}
	e.firstCell = cellOf(bounds[0])
	last := cellOf(bounds[len(bounds)-1])
	e.table = make([]uint16, last-e.firstCell+1)
	for c := range e.table {
		low := math.Float64frombits(uint64(c+e.firstCell) << 48)
		e.table[c] = uint16(sort.SearchFloat64s(bounds, low))
	}
	return e
}

func cellOf(v float64) int { return int(math.Float64bits(v) >> 48) }

// Index returns the bucket of v >= 0: the smallest i with bounds[i] >= v, len(bounds) for
// a value above every bound.
func (e *Explicit) Index(v float64) int {
	if e.fallback {
		return sort.SearchFloat64s(e.bounds, v)
	}
	c := cellOf(v) - e.firstCell
	if c < 0 {
		return 0
	}
	if c >= len(e.table) {
		return len(e.bounds)
	}
	i := int(e.table[c])
	for i < len(e.bounds) && e.bounds[i] < v {
		i++
	}
	return i
}
