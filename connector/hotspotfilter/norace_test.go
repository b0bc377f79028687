//go:build !race

package hotspotfilter

const raceEnabled = false
