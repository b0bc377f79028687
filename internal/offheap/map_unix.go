//go:build unix

package offheap // import "github.com/otelcol-red/otelcol-red/internal/offheap"

import "syscall"

func mapAnon(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	return b
}

func unmapAnon(b []byte) { _ = syscall.Munmap(b) }
