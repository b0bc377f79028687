// Package offheap maps anonymous memory outside the Go heap and counts it, process-wide.
//
// Memory mapped here holds no pointers and is not garbage collected, so it is left out of
// the Go runtime's heap goal and of its memory limit (GOMEMLIMIT) alike: a gateway whose
// exporter keeps its series and snapshot here would pass a limit set for the whole
// process while the runtime thinks it is well under it. Bytes reports what is mapped, so
// that whatever sets the runtime's limit (extension/gcheadroom) can subtract it.
package offheap // import "github.com/otelcol-red/otelcol-red/internal/offheap"

import "sync/atomic"

var mapped atomic.Int64

// Map returns n zeroed bytes of anonymous memory outside the Go heap, or nil when the system
// refuses or has no such mappings (the caller then uses the heap). Pages become resident as
// they are written.
func Map(n int) []byte {
	b := mapAnon(n)
	if b != nil {
		mapped.Add(int64(len(b)))
	}
	return b
}

// Unmap returns b, which Map returned, to the system; b must not be used afterwards.
func Unmap(b []byte) {
	if b == nil {
		return
	}
	unmapAnon(b)
	mapped.Add(-int64(len(b)))
}

// Bytes is what Map has mapped and Unmap not yet returned: an upper bound of the resident
// memory it stands for (a mapping grown by doubling has unwritten pages).
func Bytes() int64 { return mapped.Load() }

// Discard gives b's pages, b being part of what Map returned, back to the system but keeps
// the mapping: b reads as zeros afterwards, and its pages become resident again as they are
// written. It stays counted in Bytes, since it is mapped for reuse. On Linux only; elsewhere
// the pages stay and their content is undefined, so callers treat b as garbage either way.
func Discard(b []byte) {
	if len(b) > 0 {
		discardAnon(b)
	}
}
