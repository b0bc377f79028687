//go:build !race

package tracemetrics

const raceEnabled = false
