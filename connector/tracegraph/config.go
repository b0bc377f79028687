package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-red/otelcol-red/internal/spanfilter"
)

// Defaults, read by createDefaultConfig (factory.go) and by newPlan for keys left 0.
// servicegraph's are kept where they do not lose data; the store's are ours, chosen in
// README.md ("The store").
const (
	defaultFlushInterval       = 60 * time.Second
	defaultCacheLoop           = time.Minute
	defaultStoreExpirationLoop = 2 * time.Second
	// defaultStoreTTL outlasts the 5 s batch delay of OpenTelemetry SDKs on both sides of a call;
	// servicegraph's 2 s expires pairs whose spans are exported by different batches.
	defaultStoreTTL = 10 * time.Second
	// defaultStoreMaxItems holds 10,000 new edges/s for the whole ttl; servicegraph's 1000
	// refuses new halves at 500 edges/s.
	defaultStoreMaxItems    = 100_000
	defaultSeriesExpiration = 15 * time.Minute
	defaultRingSize         = 1024
	// defaultMaxExemplars is tracemetrics' (and spanmetrics') exemplars.max_per_data_point.
	defaultMaxExemplars = 5
)

// defaultPeerAttributes name a virtual node when virtual_node_peer_attributes is unset.
var defaultPeerAttributes = []string{"peer.service", "db.name", "db.system"}

// defaultDatabaseNameAttributes is database_name_attributes when it is unset or empty.
var defaultDatabaseNameAttributes = []string{"db.name"}

// Config is the tracegraph configuration. Every servicegraph v0.159.0 key is accepted with the
// same meaning, so a `service_graph:` (or `servicegraph:`) block renamed `tracegraph:` loads;
// the store's defaults are ours (above, README.md). Keys marked "ours" do not exist in
// servicegraph. v0.159.0 is the newest servicegraph the module proxy serves (versions.txt);
// TestConfigKeysMatchServicegraph fails when a newer one adds a key or changes a default.
type Config struct {
	// LatencyHistogramBuckets are the explicit bounds of the request_server and request_client
	// histograms. Empty: servicegraph's defaults, 2ms … 15s. Exclusive with
	// ExponentialHistogramMaxSize.
	LatencyHistogramBuckets []time.Duration `mapstructure:"latency_histogram_buckets"`

	// ExponentialHistogramMaxSize, when positive, makes both latency histograms exponential with
	// at most this many buckets. Default 0: explicit buckets.
	ExponentialHistogramMaxSize int32 `mapstructure:"exponential_histogram_max_size"`

	// Dimensions are span or resource attributes (the resource's value first, as servicegraph)
	// added to every edge: as client_<name> from the client span, server_<name> from the server
	// span. Default none.
	Dimensions []string `mapstructure:"dimensions"`

	// Store bounds the table of half edges waiting for their other span.
	Store StoreConfig `mapstructure:"store"`

	// CacheLoop is how often edge series not updated for SeriesExpiration are removed.
	// 0: 1m (servicegraph's default).
	CacheLoop time.Duration `mapstructure:"cache_loop"`

	// StoreExpirationLoop is how often half edges older than store.ttl are expired.
	// 0: 2s (servicegraph's default).
	StoreExpirationLoop time.Duration `mapstructure:"store_expiration_loop"`

	// VirtualNodePeerAttributes are the client span attributes, in priority order, that name
	// the server of a client span whose server span never came (a virtual node). Unset:
	// peer.service, db.name, db.system. An empty list turns virtual nodes off.
	VirtualNodePeerAttributes []string `mapstructure:"virtual_node_peer_attributes"`

	// VirtualNodeExtraLabel adds the virtual_node label ("client", "server" or "") to every
	// series. Default false.
	VirtualNodeExtraLabel bool `mapstructure:"virtual_node_extra_label"`

	// MetricsFlushInterval is how often the cumulative edge metrics are sent. 0: after every
	// drained round of input (servicegraph: after every ConsumeTraces). Unset: 60s.
	MetricsFlushInterval *time.Duration `mapstructure:"metrics_flush_interval"`

	// DatabaseNameAttributes are the attributes, in priority order, that make a client span a
	// call to a database of that name (resource first, then span). Unset or empty: db.name.
	DatabaseNameAttributes []string `mapstructure:"database_name_attributes"`

	// MetricsTimestampOffset is subtracted from the data points' timestamps. Default 0.
	MetricsTimestampOffset time.Duration `mapstructure:"metrics_timestamp_offset"`

	// SeriesExpiration (ours) is how long an edge series may go without a request before it is
	// removed. 0: 15m, the age servicegraph removes series at.
	SeriesExpiration time.Duration `mapstructure:"series_expiration"`

	// RingSize (ours) is the capacity of the intake ring, in batches (one per ConsumeTraces
	// call); a full ring makes ConsumeTraces wait. Default 1024, rounded up to a power of two.
	RingSize int `mapstructure:"ring_size"`

	// Sampling (ours) weighs edges by the spans' adjusted counts.
	Sampling SamplingConfig `mapstructure:"sampling"`
	// LateSpans is what becomes of edges whose spans end far from now (latespans.go).
	LateSpans LateSpansConfig `mapstructure:"late_spans"`

	// AggregationTemporality (ours) is AGGREGATION_TEMPORALITY_CUMULATIVE (the default:
	// totals since start, as servicegraph sends them) or AGGREGATION_TEMPORALITY_DELTA: each
	// flush sends what was counted since the one before, and an edge series idle through a whole
	// interval is removed at once, so a graph gateway that hands its edges on to an edge tier
	// holds each one only between two flushes. Delta points carry the collector's
	// service.instance.id as their resource: the writer that keeps one gateway's deltas of an
	// edge apart from another's.
	AggregationTemporality string `mapstructure:"aggregation_temporality"`

	// Messaging edges through span links, their latency histogram, exemplars: kept together.

	// Links (ours; contrib's servicegraph pairs through links since contrib #48782) pairs a
	// CONSUMER span with each PRODUCER span it links to, one messaging_system edge per link, as
	// the messaging semantic conventions correlate them: a CONSUMER span with links is paired
	// through its links only, one without through its parent as before. Default on.
	Links LinksConfig `mapstructure:"links"`

	// EnableMessagingSystemLatencyHistogram (Tempo's key) adds the
	// traces_service_graph_request_messaging_system histogram: the time from the producer's end
	// to the consumer's start, for messaging_system edges of which both spans came. Default false.
	EnableMessagingSystemLatencyHistogram bool `mapstructure:"enable_messaging_system_latency_histogram"`

	// Exemplars (tracemetrics' keys) attaches exemplars to the latency histograms.
	Exemplars ExemplarsConfig `mapstructure:"exemplars"`

	// MaxSeriesPerEdge (ours) caps the series of one client → server pair: the combinations
	// of connection_type, failed, virtual_node and dimension values it may hold. A new series
	// beyond them is counted in the pair's overflow series, whose every dimension is
	// __cardinality_overflow__ (client, server, connection_type and failed stay, so requests
	// and failures per edge stay exact). Only with dimensions. 0 (the default) means no limit.
	MaxSeriesPerEdge int `mapstructure:"max_series_per_edge"`

	// MaxCardinalityPerLabel (ours, Tempo's name) caps the distinct values each client_<dim>
	// label holds per client service and each server_<dim> label per server service: a new
	// series with a value beyond them is counted with that value replaced by
	// __cardinality_overflow__, every other label kept. A value is held while a series has it.
	// 0 (the default) means no limit.
	MaxCardinalityPerLabel int `mapstructure:"max_cardinality_per_label"`

	// Grafana Tempo metrics-generator's service-graph keys (README.md, "Coming from Tempo"),
	// one block per key.

	// FilterPolicies keeps or drops spans before they make edges, by resource and span
	// attributes, kind, status and name (Tempo's filter_policies; the same as tracemetrics').
	// Dropped spans are counted in the filtered_spans telemetry. Default: none.
	FilterPolicies []spanfilter.Policy `mapstructure:"filter_policies"`

	// SpanMultiplierKey is Tempo's name for sampling.attribute; set one or the other (or both
	// alike). Default "".
	SpanMultiplierKey string `mapstructure:"span_multiplier_key"`
}

// LinksConfig configures pairing through span links.
type LinksConfig struct {
	// Enabled pairs CONSUMER spans with the PRODUCER spans they link to. Default true; false
	// pairs every span through its parent only, as servicegraph v0.159.0 does.
	Enabled bool `mapstructure:"enabled"`
}

// ExemplarsConfig configures the exemplars of the latency histograms, with tracemetrics' keys.
type ExemplarsConfig struct {
	// Enabled attaches to each latency histogram point the trace and span IDs of up to
	// MaxPerDataPoint of the interval's requests: failed ones first, then the slowest. Default
	// false.
	Enabled bool `mapstructure:"enabled"`
	// MaxPerDataPoint bounds the exemplars of one data point per flush interval. Default 5, at
	// most 255; 0 with Enabled: none.
	MaxPerDataPoint int `mapstructure:"max_per_data_point"`
	// SlowThreshold (ours), when positive, lets exemplars name only spans that failed or lasted
	// at least this long: the spans the Elasticsearch branch stores (configs/kafka-gateway.yaml
	// and configs/es-store.yaml keep errors and spans of at least SLOW_THRESHOLD_NS), so that
	// every exemplar opens a stored span. Set it to that threshold. Default 0: any span.
	SlowThreshold time.Duration `mapstructure:"slow_threshold"`
}

// maxExemplars bounds exemplars.max_per_data_point: the count per point is a byte.
const maxExemplars = 255

// The values of aggregation_temporality, spelled as in spanmetrics.
const (
	temporalityCumulative = "AGGREGATION_TEMPORALITY_CUMULATIVE"
	temporalityDelta      = "AGGREGATION_TEMPORALITY_DELTA"
)

// maxRingSize bounds ring_size: a ring of batch pointers, a million of them is 8 MB.
const maxRingSize = 1 << 20

// StoreConfig bounds the half edges waiting for their other span.
type StoreConfig struct {
	// MaxItems is the most half edges held at once. When it is reached the oldest one is
	// expired early (counted, and a virtual node edge where configured) to make room.
	// Default 100000.
	MaxItems int `mapstructure:"max_items"`
	// TTL is how long a half edge waits for its other span. Default 10s.
	TTL time.Duration `mapstructure:"ttl"`
}

// SamplingConfig configures sampling weights.
type SamplingConfig struct {
	// Weighted counts each edge by the adjusted count of its spans (the larger of the two, from
	// a valid OpenTelemetry threshold `ot=th:…` in their W3C tracestate, else from Attribute);
	// spans without either count 1, as in servicegraph. false: every edge counts 1. Default
	// true.
	Weighted bool `mapstructure:"weighted"`
	// Attribute names an attribute holding the sampling probability p in (0, 1] (a double, an
	// int or a numeric string) a span was kept with; the span counts 1/p. Read when the
	// tracestate has no valid threshold, on the span, then on its resource (as Tempo reads
	// span_multiplier_key, its name for this key), as tracemetrics' sampling.attribute. Empty
	// (the default): not read.
	Attribute string `mapstructure:"attribute"`
}

// multiplierAttribute is the attribute that holds a span's sampling probability:
// sampling.attribute, or Tempo's span_multiplier_key (Validate makes them agree).
func (c *Config) multiplierAttribute() string {
	if c.Sampling.Attribute != "" {
		return c.Sampling.Attribute
	}
	return c.SpanMultiplierKey
}

var _ component.Config = (*Config)(nil)

// Validate checks the configuration; each error names its YAML key.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.ExponentialHistogramMaxSize < 0 {
		add("exponential_histogram_max_size: can not be negative")
	}
	if len(c.LatencyHistogramBuckets) > 0 && c.ExponentialHistogramMaxSize > 0 {
		add("latency_histogram_buckets: use either latency_histogram_buckets or exponential_histogram_max_size")
	}
	for i, b := range c.LatencyHistogramBuckets {
		if i > 0 && b <= c.LatencyHistogramBuckets[i-1] {
			add("latency_histogram_buckets[%d]: %v is not greater than the bucket before it", i, b)
			break
		}
	}
	seen := map[string]bool{}
	for i, d := range c.Dimensions {
		if d == "" {
			add("dimensions[%d]: empty attribute name", i)
		}
		if seen[d] {
			add("dimensions[%d]: %q is listed twice", i, d)
		}
		seen[d] = true
	}
	if c.Store.TTL <= 0 {
		add("store.ttl: must be positive, got %v", c.Store.TTL)
	}
	if c.Store.MaxItems <= 0 {
		add("store.max_items: must be positive, got %d", c.Store.MaxItems)
	}
	if c.CacheLoop < 0 {
		add("cache_loop: can not be negative")
	}
	if c.StoreExpirationLoop < 0 {
		add("store_expiration_loop: can not be negative")
	}
	if c.MetricsFlushInterval != nil && *c.MetricsFlushInterval < 0 {
		add("metrics_flush_interval: can not be negative")
	}
	if c.MetricsTimestampOffset < 0 {
		add("metrics_timestamp_offset: can not be negative")
	}
	if c.SeriesExpiration < 0 {
		add("series_expiration: can not be negative")
	}
	switch c.AggregationTemporality {
	case "", temporalityCumulative, temporalityDelta:
	default:
		add("aggregation_temporality: must be %s or %s, got %q", temporalityCumulative, temporalityDelta, c.AggregationTemporality)
	}
	if c.Exemplars.MaxPerDataPoint < 0 || c.Exemplars.MaxPerDataPoint > maxExemplars {
		add("exemplars.max_per_data_point: must be between 0 and %d, got %d", maxExemplars, c.Exemplars.MaxPerDataPoint)
	}
	if c.Exemplars.SlowThreshold < 0 {
		add("exemplars.slow_threshold: can not be negative")
	}
	if c.MaxSeriesPerEdge < 0 {
		add("max_series_per_edge: %d, the value should be positive or 0 (no limit)", c.MaxSeriesPerEdge)
	}
	if c.MaxCardinalityPerLabel < 0 {
		add("max_cardinality_per_label: %d, the value should be positive or 0 (no limit)", c.MaxCardinalityPerLabel)
	}
	if c.RingSize < 2 || c.RingSize > maxRingSize {
		add("ring_size: must be between 2 and %d, got %d", maxRingSize, c.RingSize)
	}
	if err := c.LateSpans.Validate("late_spans"); err != nil {
		errs = append(errs, err)
	}
	// Grafana Tempo's keys.
	if err := spanfilter.Validate("filter_policies", c.FilterPolicies); err != nil {
		errs = append(errs, err)
	}
	switch {
	case c.Sampling.Attribute != "" && !c.Sampling.Weighted:
		add("sampling.attribute: set, but sampling.weighted is false: the attribute would be ignored")
	case c.SpanMultiplierKey != "" && !c.Sampling.Weighted:
		add("span_multiplier_key: set, but sampling.weighted is false: the attribute would be ignored")
	case c.SpanMultiplierKey != "" && c.Sampling.Attribute != "" && c.SpanMultiplierKey != c.Sampling.Attribute:
		add("span_multiplier_key: %q, but sampling.attribute is %q: they are one setting, set one", c.SpanMultiplierKey, c.Sampling.Attribute)
	}
	return errors.Join(errs...)
}
