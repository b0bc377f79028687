package offheap // import "github.com/otelcol-red/otelcol-red/internal/offheap"

import "syscall"

// discardAnon drops b's pages: on Linux, a private anonymous page given back with
// MADV_DONTNEED reads as zero and is faulted in afresh when next touched.
func discardAnon(b []byte) { _ = syscall.Madvise(b, syscall.MADV_DONTNEED) }
