package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"math"
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// bucketArena holds the bucket counts of every explicit histogram series in
// large pointer-free chunks; a series keeps an offset, not a slice.
type bucketArena struct {
	chunks []offHeapChunk[uint64]
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
		a.chunks = append(a.chunks, newOffHeapChunk[uint64](bucketChunk))
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
	c := a.chunks[off/bucketChunk].values
	start := off % bucketChunk
	return c[start : start+n : start+n]
}

// release gives every chunk back; the arena is empty afterwards.
func (a *bucketArena) release() {
	for i := range a.chunks {
		a.chunks[i].free()
	}
	*a = bucketArena{}
}

func (a *bucketArena) free(off, n uint32) {
	if a.freed == nil {
		a.freed = map[uint32][]uint32{}
	}
	a.freed[n] = append(a.freed[n], off)
}

// boundSet is an interned set of explicit histogram bounds with its bucket
// lines pre-rendered, shared by every series with the same bounds.
type boundSet struct {
	bounds []float64
	// order lists, in ascending bound order and without duplicate bounds,
	// the OTLP bucket index behind each Prometheus bucket, as client_golang
	// builds them from the prometheus exporter's map.
	order  []int
	leText []string // `le="0.005"}` per entry of order
	leOM   []string // `le="0.005"}` in OpenMetrics float form
	hasInf bool     // a bound is +Inf, so no synthetic +Inf bucket
}

func (b *boundSet) equal(s pcommon.Float64Slice) bool {
	if len(b.bounds) != s.Len() {
		return false
	}
	for i, v := range b.bounds {
		if math.Float64bits(v) != math.Float64bits(s.At(i)) {
			return false
		}
	}
	return true
}

// boundSets interns bound sets; series refer to them by id. Sets are never
// freed: there are as many as distinct bucket layouts, a handful.
type boundSets struct {
	sets  []*boundSet
	index map[string]uint32 // raw bits of the bounds → id
	key   []byte
}

func (b *boundSets) init() { b.index = map[string]uint32{} }

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
	b.sets = append(b.sets, newBoundSet(bounds.AsRaw()))
	b.index[string(k)] = id
	return id
}

func newBoundSet(bounds []float64) *boundSet {
	bs := &boundSet{bounds: bounds}
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
		bs.order = append(bs.order, first[b])
		bs.leText = append(bs.leText, `le="`+string(appendTextFloat(nil, b))+`"}`)
		bs.leOM = append(bs.leOM, `le="`+string(appendOMFloat(nil, b))+`"}`)
		if math.IsInf(b, +1) {
			bs.hasInf = true
		}
	}
	return bs
}
