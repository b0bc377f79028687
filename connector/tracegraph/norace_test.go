//go:build !race

package tracegraph

const raceEnabled = false
