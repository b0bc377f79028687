package otlpwire

import (
	"sort"
	"testing"
)

// FuzzDecode feeds the differential check (checkDifferential) with the corpus and with what
// the fuzzer makes of it. `go test` runs the seeds and testdata/fuzz/FuzzDecode; a longer
// run: go test -run '^$' -fuzz FuzzDecode -fuzztime 5m ./internal/otlpwire/
func FuzzDecode(f *testing.F) {
	c := corpus()
	names := make([]string, 0, len(c))
	for name := range c {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		f.Add(c[name])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDifferential(t, data)
	})
}
