package harness

// A collector that shares its CPUs with the testbed pays for the load generator and the
// scrapers: a client that scrapes back to back takes a whole core on a two-core host, and the
// collector's rate falls whatever it does. Probes that measure what the collector itself spends
// (the decode floor, ingest under scrapes) run it alone on one CPU and the testbed on the others,
// as in a deployment where Prometheus and the senders run elsewhere. Both sides of a probe get the
// same split.

// CPUSplit is the CPUs a pinned collector gets and the ones the testbed keeps.
type CPUSplit struct {
	Collector []int
	Testbed   []int
}
