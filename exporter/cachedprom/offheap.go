package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"unsafe"

	"github.com/otelcol-red/otelcol-red/internal/offheap"
)

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
	if mem := offheap.Map(size); mem != nil {
		return offHeapChunk[T]{mem: mem, values: unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(mem))), n)}
	}
	return offHeapChunk[T]{values: make([]T, n)}
}

// free returns a mapped chunk to the system; the values must not be used
// afterwards.
func (c *offHeapChunk[T]) free() {
	if c.mem != nil {
		offheap.Unmap(c.mem)
	}
	c.mem, c.values = nil, nil
}

// offHeapBuffer is a growable byte buffer outside the Go heap: the gzip
// bodies of the snapshot. They are the largest allocations the exporter
// makes (one per render until a spare is reused), and on the heap each
// would be counted twice by the GC goal, once live and once as headroom,
// while its growth by doubling left the halves as garbage. Pages of a
// mapping are only resident once written, so growing by doubling costs RSS
// only for what is written; the old mapping is returned at once.
type offHeapBuffer struct {
	chunk offHeapChunk[byte]
	n     int
}

// Write appends p, growing the mapping when needed; it never fails.
func (b *offHeapBuffer) Write(p []byte) (int, error) {
	if b.n+len(p) > len(b.chunk.values) {
		b.grow(b.n + len(p))
	}
	b.n += copy(b.chunk.values[b.n:], p)
	return len(p), nil
}

// grow moves the content to a mapping of at least need bytes.
func (b *offHeapBuffer) grow(need int) {
	size := max(need, 2*len(b.chunk.values), offHeapBufferMin)
	next := newOffHeapChunk[byte](size)
	copy(next.values, b.chunk.values[:b.n])
	b.chunk.free()
	b.chunk = next
}

// offHeapBufferMin is the first mapping's size: small bodies should not
// cost a system call per doubling.
const offHeapBufferMin = 64 << 10

// bytes returns the content; it stays valid until the next reset, Write or free.
func (b *offHeapBuffer) bytes() []byte { return b.chunk.values[:b.n:b.n] }

// reset empties the buffer and keeps its mapping for the next content.
func (b *offHeapBuffer) reset() { b.n = 0 }

// discard empties the buffer and gives its pages back to the system, keeping the mapping for
// the next content. The whole mapping, not only the last content: a larger body written before
// left pages resident beyond it.
func (b *offHeapBuffer) discard() {
	if b.chunk.mem != nil {
		offheap.Discard(b.chunk.mem)
	}
	b.n = 0
}

// free returns the mapping to the system; bytes must not be used afterwards.
func (b *offHeapBuffer) free() {
	b.chunk.free()
	b.n = 0
}
