//go:build !unix

package offheap // import "github.com/otelcol-red/otelcol-red/internal/offheap"

func mapAnon(int) []byte { return nil }

func unmapAnon([]byte) {}
