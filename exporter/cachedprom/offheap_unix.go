//go:build unix

package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import "syscall"

// mapChunk returns n zeroed bytes of anonymous memory outside the Go heap,
// or nil when the system refuses (the caller then uses the heap).
func mapChunk(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	return b
}

func unmapChunk(b []byte) { _ = syscall.Munmap(b) }
