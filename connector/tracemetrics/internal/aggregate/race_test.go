//go:build race

package aggregate

// The race detector's runtime allocates on its own; allocation counts are meaningless then.
const raceEnabled = true
