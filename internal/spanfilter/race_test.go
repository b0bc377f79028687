//go:build race

package spanfilter

// The race detector's runtime allocates on its own; allocation counts are meaningless then.
const raceEnabled = true
