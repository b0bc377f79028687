package compare

import (
	"slices"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// Side is what one collector did in a scenario.
type Side struct {
	Name   string `json:"name"`
	Binary string `json:"binary"`
	Config string `json:"config"`
	// Sent is the number of spans the collector acknowledged (OTLP) or that were written to the
	// topic it consumes (Kafka).
	Sent int64 `json:"sent"`
	// Counted is the sum of the calls counters scraped at the end; Lost = Sent - Counted must be 0.
	Counted int64 `json:"counted"`
	Lost    int64 `json:"lost"`
	// SpansPerSec is the sustained rate: spans taken over the load window (OTLP) or spans of the
	// backlog over the time to consume it (Kafka).
	SpansPerSec float64 `json:"spans_per_sec"`
	// CPUPercent is the mean over the load window; CPUSecondsPerMillion normalises it by the work
	// done, which is the fair comparison when both keep up with a fixed rate.
	CPUPercent           float64 `json:"cpu_percent"`
	CPUSecondsPerMillion float64 `json:"cpu_seconds_per_million_spans"`
	RSSMaxMiB            float64 `json:"rss_max_mib"`
	// ScrapeP50 and ScrapeP99 are over the useful scrapes: those that returned samples or failed.
	ScrapesUseful int            `json:"scrapes_useful"`
	ScrapeP50     harness.Millis `json:"scrape_p50_ms"`
	ScrapeP99     harness.Millis `json:"scrape_p99_ms"`
	// ScrapeWireBytes is the gzip size of the last scrape during the load.
	ScrapeWireBytes int64            `json:"scrape_wire_bytes"`
	Scrapes         []harness.Scrape `json:"scrapes"`
	Samples         []harness.Sample `json:"samples"`
	// Retries counts refused sends that were retried; Missed counts paced sends skipped because
	// every worker was still waiting on the collector.
	Retries int64  `json:"retries"`
	Missed  int64  `json:"missed"`
	Error   string `json:"error,omitempty"`
}

// Result is one scenario run: ours and stock side by side.
type Result struct {
	Scenario Scenario  `json:"scenario"`
	Start    time.Time `json:"start"`
	// Window is the load window (OTLP) or the time the slower collector took to consume the backlog
	// (Kafka).
	Window time.Duration `json:"window_ns"`
	// LoadAverage is the host's 1-minute load average when the scenario started.
	LoadAverage float64 `json:"load_average"`
	Ours        Side    `json:"ours"`
	Stock       Side    `json:"stock"`
}

// percentile returns the p-th percentile (0 < p ≤ 100) of scrape latencies by the nearest-rank
// method, which never invents a value between two observed scrapes. Scrapes that found no series
// yet (taken before the collector's first metrics flush) are left out: they time an empty page.
func percentile(scrapes []harness.Scrape, p float64) time.Duration {
	var lat []time.Duration
	for _, s := range scrapes {
		if useful(s) {
			lat = append(lat, s.Latency)
		}
	}
	slices.Sort(lat)
	return harness.NearestRank(lat, p)
}

// useful tells whether a scrape counts in the latency percentiles.
func useful(s harness.Scrape) bool { return s.Failed || !s.Empty }
