//go:build !linux

package offheap // import "github.com/otelcol-red/otelcol-red/internal/offheap"

// discardAnon keeps the pages elsewhere: the systems' MADV_DONTNEED differ (some keep the
// content, some only hint), and the syscall package offers madvise on Linux alone.
func discardAnon([]byte) {}
