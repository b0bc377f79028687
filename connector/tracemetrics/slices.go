package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import "slices"

// Slice growth shared by the batches, the interval buffers, the exemplar slots and the
// flusher's per-series slices.

// grow returns s with length at least n, new elements zero.
func grow[T any](s []T, n int) []T {
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

// appendZeros appends n zero values to s.
func appendZeros[T any](s []T, n int) []T {
	l := len(s)
	s = grow(s, l+n)
	clear(s[l:])
	return s
}

// reuseID takes an id from the free list, if it holds one.
func reuseID(free *[]uint32) (uint32, bool) {
	n := len(*free)
	if n == 0 {
		return 0, false
	}
	id := (*free)[n-1]
	*free = (*free)[:n-1]
	return id, true
}
