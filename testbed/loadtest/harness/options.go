package harness

import "time"

// Options are the settings every mode's runs share; a mode that needs more embeds them.
type Options struct {
	// ScrapeInterval spaces the Prometheus-style scrapes taken during the load; a scrape times out
	// after one interval, the longest timeout Prometheus allows.
	ScrapeInterval time.Duration
	// SampleInterval spaces the CPU, RSS and throughput readings.
	SampleInterval time.Duration
	// FlushInterval is handed to the collectors as METRICS_FLUSH_INTERVAL: how often the
	// trace-to-metrics connector emits its series.
	FlushInterval time.Duration
	// DrainTimeout bounds the wait, after the load, for the calls counters to reach the spans sent.
	// The first check comes one flush interval after the load; a scrape of 100k series may take
	// tens of seconds on a busy machine, so this is generous.
	DrainTimeout time.Duration
	// KafkaTimeout bounds the time a collector may take to consume a backlog.
	KafkaTimeout time.Duration
	// Concurrency is the number of requests in flight per collector.
	Concurrency int
	// CallsMetric is the counter whose sum must equal the spans sent.
	CallsMetric string
	// RawDir receives collector logs.
	RawDir string
	// RSSCap is the resident set size at which a probe kills a collector (0: no cap).
	RSSCap uint64
	// CPUProfile makes the floor and scaling probes take a CPU profile this long (whole seconds,
	// at most the measured phase) of every collector, from the start of its measured phase, and
	// the million-series probe one from the first flush (its load lasts until the profile ends);
	// the pprof extension is added to each config by an overlay (solo/overlay.go). 0: none.
	CPUProfile time.Duration
	// Kafka is the broker wiring, used by the runs that read a Kafka backlog only.
	Kafka Kafka
}
