package probes

import "github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"

// Options are the settings of a probe run: those every mode shares and the memory probe's heap
// profile.
type Options struct {
	harness.Options
	// HeapProfile makes the memory probe take a heap profile of ours at the end of its load; our
	// config must then enable the pprof extension on ${env:PPROF_ENDPOINT}.
	HeapProfile bool
	// HeapProfileAtEnd moves that profile from the second flush to the last second of the load,
	// when every series exists and several flushes and renders have run: the state whose RSS
	// keeps growing after the second flush.
	HeapProfileAtEnd bool
}
