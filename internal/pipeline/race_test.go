//go:build race

package pipeline

// The race detector drops sync.Pool items at random and allocates on its own: allocation
// counts are meaningless then.
const raceEnabled = true
