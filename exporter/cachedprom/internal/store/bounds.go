package store // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"

import (
	"math"
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// BoundSet is an interned set of explicit histogram bounds, shared by every
// series with the same bounds. It never changes once made.
type BoundSet struct {
	id     uint32
	Bounds []float64
	// Order lists, in ascending bound order and without duplicate bounds,
	// the OTLP bucket index behind each Prometheus bucket, as client_golang
	// builds them from the prometheus exporter's map.
	Order  []int
	HasInf bool // a bound is +Inf, so no synthetic +Inf bucket
}

// ID is the set's id, from 0 up: sets are never freed, so a renderer may
// keep what it derives from a set (its `le` strings) by id.
func (b *BoundSet) ID() uint32 { return b.id }

func (b *BoundSet) equal(s pcommon.Float64Slice) bool {
	if len(b.Bounds) != s.Len() {
		return false
	}
	for i, v := range b.Bounds {
		if math.Float64bits(v) != math.Float64bits(s.At(i)) {
			return false
		}
	}
	return true
}

// boundSets interns bound sets; series refer to them by id. Sets are never
// freed: there are as many as distinct bucket layouts, a handful.
type boundSets struct {
	sets  []*BoundSet
	index map[string]uint32 // raw bits of the bounds → id
	key   []byte
}

func newBoundSets() boundSets { return boundSets{index: map[string]uint32{}} }

func (b *boundSets) intern(bounds pcommon.Float64Slice) uint32 {
	k := b.key[:0]
	for i := 0; i < bounds.Len(); i++ {
		bits := math.Float64bits(bounds.At(i))
		k = append(k, byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24), byte(bits>>32), byte(bits>>40), byte(bits>>48), byte(bits>>56))
	}
	b.key = k
	if id, ok := b.index[string(k)]; ok {
		return id
	}
	id := uint32(len(b.sets))
	b.sets = append(b.sets, newBoundSet(id, bounds.AsRaw()))
	b.index[string(k)] = id
	return id
}

func newBoundSet(id uint32, bounds []float64) *BoundSet {
	bs := &BoundSet{id: id, Bounds: bounds}
	first := map[float64]int{}
	uniq := make([]float64, 0, len(bounds))
	for i, b := range bounds {
		if _, ok := first[b]; !ok {
			first[b] = i
			uniq = append(uniq, b)
		}
	}
	sort.Float64s(uniq)
	for _, b := range uniq {
		bs.Order = append(bs.Order, first[b])
		if math.IsInf(b, +1) {
			bs.HasInf = true
		}
	}
	return bs
}
