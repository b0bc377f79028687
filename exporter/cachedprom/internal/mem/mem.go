// Package mem holds cachedprom's memory outside the Go heap: chunks of
// pointer-free values (the series store's rows, label bytes and bucket
// counts) and growable byte buffers (the snapshot's gzip bodies).
//
// The store's big arrays hold no pointers, so they can live outside the Go
// heap. There they do not count towards the heap goal: at the default GOGC
// the heap may grow to twice what is live before a collection, and for state
// that is hundreds of megabytes and never garbage, that headroom would be
// pure RSS (BenchmarkRSS shows the difference). Chunks are mapped whole and
// unmapped whole when their owner lets them go; off-heap memory must never
// hold a pointer.
package mem // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/mem"

import (
	"unsafe"

	"github.com/otelcol-red/otelcol-red/internal/offheap"
)

// Chunk is a chunk of n elements of T outside the Go heap, or on the heap
// when mapping fails. T must not contain pointers. The zero Chunk holds
// nothing.
type Chunk[T any] struct {
	mem []byte // the mapping; nil when on the heap
	// Values are the chunk's elements; nil once freed.
	Values []T
}

// NewChunk returns a chunk of n zero elements.
func NewChunk[T any](n int) Chunk[T] {
	var zero T
	size := n * int(unsafe.Sizeof(zero))
	if mem := offheap.Map(size); mem != nil {
		return Chunk[T]{mem: mem, Values: unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(mem))), n)}
	}
	return Chunk[T]{Values: make([]T, n)}
}

// Mapped is the number of bytes the chunk maps outside the heap: 0 for a
// chunk on the heap or freed.
func (c *Chunk[T]) Mapped() int { return len(c.mem) }

// Free returns a mapped chunk to the system; the values must not be used
// afterwards.
func (c *Chunk[T]) Free() {
	if c.mem != nil {
		offheap.Unmap(c.mem)
	}
	c.mem, c.Values = nil, nil
}

// Buffer is a growable byte buffer outside the Go heap: the gzip bodies of
// the snapshot. They are the largest allocations the exporter makes (one per
// render until a spare is reused), and on the heap each would be counted
// twice by the GC goal, once live and once as headroom, while its growth by
// doubling left the halves as garbage. Pages of a mapping are only resident
// once written, so growing by doubling costs RSS only for what is written;
// the old mapping is returned at once. The zero Buffer is empty.
type Buffer struct {
	chunk Chunk[byte]
	n     int
}

// Write appends p, growing the mapping when needed; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	if b.n+len(p) > len(b.chunk.Values) {
		b.grow(b.n + len(p))
	}
	b.n += copy(b.chunk.Values[b.n:], p)
	return len(p), nil
}

// grow moves the content to a mapping of at least need bytes.
func (b *Buffer) grow(need int) {
	size := max(need, 2*len(b.chunk.Values), bufferMin)
	next := NewChunk[byte](size)
	copy(next.Values, b.chunk.Values[:b.n])
	b.chunk.Free()
	b.chunk = next
}

// bufferMin is the first mapping's size: small bodies should not cost a
// system call per doubling.
const bufferMin = 64 << 10

// Bytes returns the content; it stays valid until the next Reset, Write or
// Free.
func (b *Buffer) Bytes() []byte { return b.chunk.Values[:b.n:b.n] }

// Len is the length of the content.
func (b *Buffer) Len() int { return b.n }

// Cap is the size of the mapping the content is written into.
func (b *Buffer) Cap() int { return len(b.chunk.Values) }

// Reset empties the buffer and keeps its mapping for the next content.
func (b *Buffer) Reset() { b.n = 0 }

// Discard empties the buffer and gives its pages back to the system, keeping
// the mapping for the next content. The whole mapping, not only the last
// content: a larger body written before left pages resident beyond it.
func (b *Buffer) Discard() {
	if b.chunk.mem != nil {
		offheap.Discard(b.chunk.mem)
	}
	b.n = 0
}

// Free returns the mapping to the system; Bytes must not be used afterwards.
func (b *Buffer) Free() {
	b.chunk.Free()
	b.n = 0
}
