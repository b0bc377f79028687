package solo

import (
	"fmt"
	"strings"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// The records of every probe mode, kept in one place so that the raw JSON of each mode has one
// shape: a ProbeRun's optional parts are each filled by one mode (Staleness by the staleness
// probe, Native by the native histogram probe, the Floor summary by the floor and scaling runs).

// ProbeResult is what one probe measured, a ProbeRun per collector (and shape) it ran.
type ProbeResult struct {
	Probe       Probe      `json:"probe"`
	Title       string     `json:"title"`
	Start       time.Time  `json:"start"`
	End         time.Time  `json:"end"`
	LoadAverage float64    `json:"load_average"`
	Runs        []ProbeRun `json:"runs"`
	// Floor summarizes the runs of a floor or scaling probe (RunFloor) over their rounds, one
	// entry per shape.
	Floor []FloorSummary `json:"floor,omitempty"`
	Error string         `json:"error,omitempty"`
}

// ProbeRun is one collector's run in a probe.
type ProbeRun struct {
	Collector string `json:"collector"`
	// Round is the round (1-based) of a probe that measures its sides several times
	// (Probe.Rounds); 0 otherwise.
	Round  int    `json:"round,omitempty"`
	Binary string `json:"binary"`
	Config string `json:"config"`
	Series int    `json:"series"`
	// LoadAverage is the host's 1-minute load average when this collector started: runs of one
	// probe are sequential, and the host is shared.
	LoadAverage float64 `json:"load_average"`
	// Placement says which CPUs the collector and the testbed ran on (Probe.PinCPU).
	Placement string `json:"placement,omitempty"`
	// Phases are the measured windows, in order.
	Phases []Phase `json:"phases"`
	// Flushes are the metric deliveries seen in the collector's own telemetry (chunks of one flush
	// grouped), with the RSS right after each.
	Flushes []FlushRSS `json:"flushes,omitempty"`
	// Killed is set when the RSS cap ended the collector: the reading that passed it.
	Killed *harness.Sample `json:"killed,omitempty"`
	// Sent and Counted are the spans acknowledged during the load and the sum of the calls
	// counters read after it (-1: unreadable), where the probe checks exactness (Counted 0 and
	// Sent 0: not checked).
	Sent    int64 `json:"sent,omitempty"`
	Counted int64 `json:"counted,omitempty"`
	// Renders and RenderSeconds are the snapshot renders of cachedprom from the second flush to
	// the end of the load and their mean time, from its own telemetry (the memory probe, ours).
	Renders       int     `json:"renders,omitempty"`
	RenderSeconds float64 `json:"render_seconds,omitempty"`
	// FirstRenderSeconds is how long cachedprom's first render after the first flush took,
	// and FirstRenderAfter when the probe first saw it done, in seconds after it saw that
	// flush (polled each second): the render that makes the burst's series visible
	// (the memory probe, ours; 0: none seen during the load).
	FirstRenderSeconds float64 `json:"first_render_seconds,omitempty"`
	FirstRenderAfter   float64 `json:"first_render_after_seconds,omitempty"`
	// StopSeconds is how long the graceful shutdown (final flush included) took.
	StopSeconds float64 `json:"stop_seconds"`
	// RSSMaxMiB is the largest RSS reading of the whole run.
	RSSMaxMiB float64 `json:"rss_max_mib"`
	// HeapProfile is the path of the heap profile taken at the end of the load, if any, and
	// HeapTop the `go tool pprof -top -inuse_space` summary of it.
	HeapProfile string `json:"heap_profile,omitempty"`
	HeapTop     string `json:"heap_top,omitempty"`
	// CPUProfile is the path of the CPU profile taken during the measured phase (harness.Options.CPUProfile),
	// if any, and CPUTop the `go tool pprof -top` summary of it.
	CPUProfile string `json:"cpu_profile,omitempty"`
	CPUTop     string `json:"cpu_top,omitempty"`
	// HeapInuseBytes is the in-use heap of that profile (sum of inuse_space).
	HeapInuseBytes int64 `json:"heap_inuse_bytes,omitempty"`
	// MemStats are runtime.MemStats fields read right after that profile.
	MemStats map[string]float64 `json:"mem_stats,omitempty"`
	// Staleness is set by the staleness probe.
	Staleness *Staleness `json:"staleness,omitempty"`
	// Native is set by the native histogram probe.
	Native  *NativeRun       `json:"native,omitempty"`
	Samples []harness.Sample `json:"samples"`
	Error   string           `json:"error,omitempty"`
}

// Label names a run in the report and the log: the collector, its series and its round, if any.
func (r ProbeRun) Label() string {
	if r.Round > 0 {
		return fmt.Sprintf("%s (%d series, round %d)", r.Collector, r.Series, r.Round)
	}
	return fmt.Sprintf("%s (%d series)", r.Collector, r.Series)
}

// Summary is the run in one line, for the log.
func (r ProbeRun) Summary() string {
	var parts []string
	for _, ph := range r.Phases {
		parts = append(parts, fmt.Sprintf("%s %.0f spans/s, RSS max %.0f MiB", ph.Name, ph.SpansPerSec, ph.RSSMaxMiB))
	}
	if r.Killed != nil {
		parts = append(parts, fmt.Sprintf("killed at %.2f GiB after %.0f s", r.Killed.RSSMiB/1024, r.Killed.At))
	}
	if len(parts) == 0 {
		return "nothing measured"
	}
	return strings.Join(parts, "; ")
}

// Phase is one measured window of a run.
type Phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	// Spans is what the collector acknowledged in the window.
	Spans       int64   `json:"spans"`
	SpansPerSec float64 `json:"spans_per_sec"`
	CPUPercent  float64 `json:"cpu_percent"`
	RSSMaxMiB   float64 `json:"rss_max_mib"`
	RSSEndMiB   float64 `json:"rss_end_mib"`
	// StealPercent is the share of the collector's CPUs' time (all the host's when it was not
	// pinned) that the hypervisor gave to other guests in the window, from /proc/stat; nil where
	// it could not be read. Runs that differ in it differ in the CPU they had.
	StealPercent *float64 `json:"steal_percent,omitempty"`
	// Scrapes made in the window (the probe's own scrapers).
	Scrapes ScrapeStats `json:"scrapes"`
}

// CPUPerSpan is the CPU seconds the phase spent per span.
func (ph Phase) CPUPerSpan() float64 {
	if ph.SpansPerSec <= 0 {
		return 0
	}
	return ph.CPUPercent / 100 / ph.SpansPerSec
}

// ScrapeStats counts the scrapes of a window by outcome.
type ScrapeStats struct {
	Clients int  `json:"clients"`
	Gzip    bool `json:"gzip"`
	OK      int  `json:"ok"`
	// Empty counts 200 answers without content (no flush rendered yet): no body, or a gzip body
	// that inflates to nothing. They are not in P50/P99.
	Empty int `json:"empty"`
	// Unavailable counts 503 answers (an in-flight limit turning scrapes away).
	Unavailable int `json:"unavailable"`
	// OtherStatus counts any other HTTP status.
	OtherStatus int `json:"other_status"`
	// Failed counts scrapes that got no answer: connection error or timeout.
	Failed int `json:"failed"`
	// P50 and P99 are over the 200 answers.
	P50 harness.Millis `json:"p50_ms"`
	P99 harness.Millis `json:"p99_ms"`
	// HeadersP50 and HeadersP99 are the time to the response headers (sent with the first body
	// bytes) of the same answers: what the server took before it started writing. The rest of P50
	// and P99 is the transfer of the body to its last byte, which is what Prometheus times as
	// scrape_duration_seconds (it also inflates the body, which this client does not).
	HeadersP50 harness.Millis `json:"headers_p50_ms"`
	HeadersP99 harness.Millis `json:"headers_p99_ms"`
	// WireBytes is the size of the last 200 body as transferred.
	WireBytes int64 `json:"wire_bytes"`
}

// Delivery is a moment a collector's metrics exporter was seen to have received new points.
type Delivery struct {
	// At is seconds on the collector's clock (Instance.Elapsed).
	At float64 `json:"at"`
	// Points is how many points arrived since the previous reading.
	Points int64 `json:"points"`
}

// FlushRSS is one flush and the memory right after it.
type FlushRSS struct {
	// At is seconds since the collector started.
	At     float64 `json:"at"`
	Points int64   `json:"points"`
	// RSSMiB is the first RSS reading after the flush; RSSMaxMiB the largest until the next flush
	// (or the end of the load).
	RSSMiB    float64 `json:"rss_mib"`
	RSSMaxMiB float64 `json:"rss_max_mib"`
}

// Staleness is how late a collector's flushes were while it drained a backlog.
type Staleness struct {
	IntervalSeconds float64 `json:"interval_seconds"`
	// ConsumeSeconds is the time from the first to the last span of the backlog accepted.
	ConsumeSeconds float64 `json:"consume_seconds"`
	SpansPerSec    float64 `json:"spans_per_sec"`
	// Flushes are the deliveries (chunks grouped) from the collector's start until two intervals
	// after the backlog was consumed.
	Flushes []Delivery `json:"flushes"`
	// MaxGapSeconds is the longest time between two flushes from the first span of the backlog
	// until one interval after its last (when the flush holding it is due), and
	// MaxLatenessSeconds that minus the interval: how late the latest flush was.
	MaxGapSeconds      float64 `json:"max_gap_seconds"`
	MaxLatenessSeconds float64 `json:"max_lateness_seconds"`
	// ExpectedFlushes is the window over the interval, the flushes an on-time collector makes.
	ExpectedFlushes int `json:"expected_flushes"`
	// PageChanges are the moments the gzip body of /metrics, scraped every second, changed; the
	// longest gap between them is what a Prometheus user would see as stale.
	PageChanges       []float64 `json:"page_changes"`
	MaxPageGapSeconds float64   `json:"max_page_gap_seconds"`
	PageScrapesFailed int       `json:"page_scrapes_failed"`
	// BacklogSpans is what was written to the topic and CallsCounted the sum of the calls counters
	// scraped at the end: equal when nothing was lost.
	BacklogSpans int64 `json:"backlog_spans"`
	CallsCounted int64 `json:"calls_counted"`
}

// FloorSummary is the floor probe at one shape over its rounds: each side's medians and the
// floor ÷ ours ratios, of the medians and round by round.
type FloorSummary struct {
	Series int `json:"series"`
	// Floor and Ours summarize the runs of each side that measured a phase with spans and CPU.
	Floor FloorSide `json:"floor"`
	Ours  FloorSide `json:"ours"`
	// CostRatio is floor ÷ ours of the median CPU µs per span, RateRatio ours ÷ floor of the
	// median spans/s; 0 when a side has no run.
	CostRatio float64 `json:"cost_ratio"`
	RateRatio float64 `json:"rate_ratio"`
	// Rounds are the rounds in which both sides measured a phase, each side against the same
	// round's other side, in round order.
	Rounds []FloorRound `json:"rounds"`
	// RoundCostRatio and RoundRateRatio are the medians of the Rounds' ratios; 0 without rounds.
	// RoundCostRatio is the probe's headline: CPU per span does not depend on whether the load
	// generator kept a collector saturated, and a ratio within a round leaves out the host's
	// drift between rounds.
	RoundCostRatio float64 `json:"round_cost_ratio"`
	RoundRateRatio float64 `json:"round_rate_ratio"`
}

// FloorSide is one side of the floor probe at one shape.
type FloorSide struct {
	// Runs is how many runs measured a phase.
	Runs             int            `json:"runs"`
	CPUMicrosPerSpan harness.Spread `json:"cpu_us_per_span"`
	SpansPerSec      harness.Spread `json:"spans_per_sec"`
}

// FloorRound is floor ÷ ours in CPU per span and ours ÷ floor in rate within one round.
type FloorRound struct {
	Round     int     `json:"round"`
	CostRatio float64 `json:"cost_ratio"`
	RateRatio float64 `json:"rate_ratio"`
}

// NativeFormat is one way of scraping a side of the native histogram probe.
type NativeFormat string

const (
	// FormatProtobuf asks as Prometheus 3 with native histograms does; the answer must be protobuf.
	FormatProtobuf NativeFormat = "protobuf"
	// FormatText asks as the other scrapes of the testbed do (Prometheus 2's header); the answer is
	// text 0.0.4 from a collector without OpenMetrics.
	FormatText NativeFormat = "text"
)

// NativeRun is what the native probe measured of one side beyond its load phase.
type NativeRun struct {
	// RSSIdleMiB is the RSS after start-up, before any load; RSSSettledMiB the RSS once the load
	// ended and its last flush was rendered, before any scrape. Their difference over the series is
	// the memory per series.
	RSSIdleMiB    float64 `json:"rss_idle_mib"`
	RSSSettledMiB float64 `json:"rss_settled_mib"`
	// Scrapes are the timed scrapes, one entry per format.
	Scrapes []NativeScrapes `json:"scrapes"`
}

// BytesPerSeries is the RSS growth from idle to settled per RED series.
func (n *NativeRun) BytesPerSeries(series int) float64 {
	if n == nil || series == 0 || n.RSSSettledMiB == 0 {
		return 0
	}
	return (n.RSSSettledMiB - n.RSSIdleMiB) * (1 << 20) / float64(series)
}

// NativeScrapes are the timed scrapes of one side in one format.
type NativeScrapes struct {
	Format NativeFormat `json:"format"`
	// ContentType is the last answer's.
	ContentType string `json:"content_type"`
	OK          int    `json:"ok"`
	// Latencies run from the request to the last byte of the gzip body, in ms.
	Latencies []harness.Millis `json:"latencies_ms"`
	P50       harness.Millis   `json:"p50_ms"`
	Max       harness.Millis   `json:"max_ms"`
	// WireBytes is the last body as transferred (gzip), BodyBytes the same inflated.
	WireBytes int64 `json:"wire_bytes"`
	BodyBytes int64 `json:"body_bytes"`
	// Body is what the last protobuf body holds (families, histograms by kind, exemplars); nil for
	// text.
	Body *ProtoBodyStats `json:"body,omitempty"`
	// RSSMaxMiB is the side's largest RSS reading while it was scraped in this format.
	RSSMaxMiB float64 `json:"rss_max_mib"`
	Error     string  `json:"error,omitempty"`
}

// ProtoBodyStats counts what a protobuf exposition holds.
type ProtoBodyStats struct {
	Families int `json:"families"`
	Metrics  int `json:"metrics"`
	// NativeHistograms have a schema; ClassicHistograms have buckets and no schema.
	NativeHistograms  int `json:"native_histograms"`
	ClassicHistograms int `json:"classic_histograms"`
	Exemplars         int `json:"exemplars"`
	CreatedTimestamps int `json:"created_timestamps"`
}
