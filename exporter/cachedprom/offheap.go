package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import "unsafe"

// The store's big arrays (label bytes, rows, bucket counts) hold no
// pointers, so they can live outside the Go heap. There they do not count
// towards the heap goal: at the default GOGC the heap may grow to twice what
// is live before a collection, and for state that is hundreds of megabytes
// and never garbage, that headroom would be pure RSS (BenchmarkRSS shows
// the difference). Chunks are mapped whole and unmapped whole when the store
// lets them go; off-heap memory must never hold a pointer.

// offHeapChunk is a chunk of n elements of T outside the Go heap, or on
// the heap when mapping fails. T must not contain pointers.
type offHeapChunk[T any] struct {
	mem    []byte // the mapping; nil when on the heap
	values []T
}

func newOffHeapChunk[T any](n int) offHeapChunk[T] {
	var zero T
	size := n * int(unsafe.Sizeof(zero))
	if mem := mapChunk(size); mem != nil {
		return offHeapChunk[T]{mem: mem, values: unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(mem))), n)}
	}
	return offHeapChunk[T]{values: make([]T, n)}
}

// free returns a mapped chunk to the system; the values must not be used
// afterwards.
func (c *offHeapChunk[T]) free() {
	if c.mem != nil {
		unmapChunk(c.mem)
	}
	c.mem, c.values = nil, nil
}
