//go:build !race

package spanfilter

const raceEnabled = false
