package series // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

import (
	"math"

	"github.com/lightstep/go-expohisto/mapping"
	"github.com/lightstep/go-expohisto/mapping/logarithm"
)

// The scale-20 index of every duration, computed once per span on the producers' side.
// go-expohisto's logarithm mapping takes floor(math.Log(v) * 2^20/ln 2), and math.Log was
// most of what an exponential histogram cost per span over an explicit one (whose bucket comes
// from a table). expoIndex20 gets the same index from the float64's bits instead: the exponent
// gives the octave, a table indexed by the top bits of the mantissa gives log2 at the start of
// one of 2^expoTableBits slices of the octave, and a short series the rest of the way. That
// value is within ~1e-9 of the exact scaled logarithm, and go-expohisto's within ~5e-8 for
// |log2 v| <= expoFastExp; when it lies farther than expoMargin from an integer, both floors
// are the same integer. Values nearer a bucket boundary (a few in 10^5), exact powers of two,
// and values outside the fast range go to go-expohisto itself, so the index is always the one
// it would give (TestExpoIndex20MatchesLogarithmMapping).

const (
	expoTableBits = 8
	expoFastExp   = 64
	expoMargin    = 1.0 / (1 << 16)
)

var expoMapping20 = func() mapping.Mapping {
	m, err := logarithm.NewMapping(expoMaxScale)
	if err != nil {
		panic(err)
	}
	return m
}()

// expoTab holds, for each slice j of an octave (whose start is 1 + j/2^k), log2 of the start
// times 2^20, and 2^-52 over the start, which turns the mantissa bits past the slice's start
// into r below. 16 bytes a slice, 4 KiB in all: it stays in the L1 cache.
var expoTab = func() (t [1 << expoTableBits]struct{ log2, inv float64 }) {
	for j := range t {
		x := 1 + float64(j)/(1<<expoTableBits)
		t[j].log2 = math.Log2(x) * (1 << expoMaxScale)
		t[j].inv = 0x1p-52 / x
	}
	return t
}()

// The series of ln(1+r) times 2^20/ln 2 (the index units at scale 20), term by term.
const (
	expoC1 = math.Log2E * (1 << expoMaxScale)
	expoC2 = -expoC1 / 2
	expoC3 = expoC1 / 3
	expoC4 = -expoC1 / 4
	expoC5 = expoC1 / 5
)

// ExpoIndex20 returns the observation code of v >= 0: its bucket index at scale 20, or
// zeroCode.
func ExpoIndex20(v float64) int32 {
	if v == 0 {
		return ZeroCode
	}
	if i, ok := expoIndex20Fast(v); ok {
		return i
	}
	return expoMapping20.MapToIndex(v)
}

// expoIndex20Fast returns the scale-20 index of v > 0 from the table, or false when v is
// left to go-expohisto: outside the fast range, a power of two, or near a bucket boundary.
func expoIndex20Fast(v float64) (int32, bool) {
	b := math.Float64bits(v)
	exp := int64(b>>52) - 1023 // a set sign bit puts it out of the fast range
	m := b & (1<<52 - 1)
	if m == 0 || exp < -expoFastExp || exp > expoFastExp {
		return 0, false
	}
	j := m >> (52 - expoTableBits)
	// 1+f = (1 + j/2^k)(1 + r): r = (f - j/2^k) / (1 + j/2^k), 0 <= r < 2^-k. f - j/2^k is
	// the mantissa's low bits, exact as a float64.
	e := &expoTab[j]
	r := float64(m&(1<<(52-expoTableBits)-1)) * e.inv
	// ln(1+r) to r^5 (the next term is below 1e-15 for r < 2^-8), in index units. Grouped
	// (Estrin) so that the multiplications overlap: the chain is a few operations long
	// instead of ten, which is what this costs per span.
	r2 := r * r
	x := e.log2 + r*((expoC1+expoC2*r)+r2*((expoC3+expoC4*r)+expoC5*r2))
	i := int32(x) // x >= 0: truncation is the floor
	if d := x - float64(i); d < expoMargin || d > 1-expoMargin {
		return 0, false
	}
	return int32(exp<<expoMaxScale) + i, true
}
