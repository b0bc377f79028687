package series // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

import "slices"

// Slice growth shared by the batches, the interval buffers, the exemplar slots and the
// flusher's per-series slices.

// Grow returns s with length at least n, new elements zero.
func Grow[T any](s []T, n int) []T {
	if n <= len(s) {
		return s
	}
	if n <= cap(s) {
		s = s[:n]
		return s
	}
	// append's growth policy: doubling while small, about 1.25x for large slices, so a store
	// of a million series does not carry a million slots of slack.
	s = slices.Grow(s, n-len(s))
	return s[:n]
}

// AppendZeros appends n zero values to s.
func AppendZeros[T any](s []T, n int) []T {
	l := len(s)
	s = Grow(s, l+n)
	clear(s[l:])
	return s
}
