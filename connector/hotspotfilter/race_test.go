//go:build race

package hotspotfilter

// Under the race detector sync.Pool drops items at random and the runtime allocates on its own:
// allocation counts are meaningless then.
const raceEnabled = true
