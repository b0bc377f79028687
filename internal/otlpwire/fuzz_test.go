package otlpwire

import (
	"sort"
	"testing"
)

// maxSeed leaves the corpus's large requests (the realistic and all-fields ones, ~18 KiB) to
// the unit tests: the fuzzer mutates small inputs faster and minimises what it finds in
// seconds instead of minutes.
const maxSeed = 4 << 10

// FuzzDecode feeds the differential check (checkDifferential) with the corpus and with what
// the fuzzer makes of it. `go test` runs the seeds and testdata/fuzz/FuzzDecode; a longer
// run: go test -run '^$' -fuzz FuzzDecode -fuzztime 5m -fuzzminimizetime 10s ./internal/otlpwire/
func FuzzDecode(f *testing.F) {
	c := corpus()
	names := make([]string, 0, len(c))
	for name, data := range c {
		if len(data) <= maxSeed {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		f.Add(c[name])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDifferential(t, data)
	})
}
