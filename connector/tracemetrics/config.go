package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"encoding"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/dimglob"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/spanfilter"
)

// The keys below mirror spanmetrics v0.165.1 one for one (same names, same meaning, same
// defaults but for series_expiration's), so renaming `span_metrics:` (or `spanmetrics:`) to
// `tracemetrics:` in a configuration is enough. MaxSeries, MaxSeriesPerService,
// MaxCardinalityPerLabel, CapSelection, RingSize, RingMemoryMiB, SpanName and Sampling are
// ours; README.md lists what differs.

// Defaults and bounds, one source of truth: createDefaultConfig (factory.go) and the plan
// (plan.go, for keys left 0) read them, Validate names them. spanmetrics' defaults are kept as
// they are; ours are chosen in README.md.
const (
	// DefaultNamespace prefixes metric names: traces.span.metrics.calls, ....duration, ....events.
	DefaultNamespace            = "traces.span.metrics"
	defaultFlushInterval        = 60 * time.Second
	defaultResourceMetricsCache = 1000
	defaultMaxPerDataPoint      = 5
	// defaultExpoMaxSize is histogram.exponential.max_size when it is 0 (go-expohisto's and
	// spanmetrics' default).
	defaultExpoMaxSize = 160
	// defaultMaxSeries and defaultSeriesExpiration keep a 2-core / 4 GB gateway out of the
	// memory limiter's refusals: README.md ("Memory and the defaults") has the arithmetic.
	defaultMaxSeries        = 500_000
	defaultSeriesExpiration = 5 * time.Minute
	defaultRingSize         = 1024
	maxRingSize             = 1 << 20
	defaultRingMemoryMiB    = 64
	maxRingMemoryMiB        = 1 << 16
	// defaultSelectionMiB is cap_selection.memory_mib when 0: README.md ("Which series a cap
	// keeps") has the measurements.
	defaultSelectionMiB = 16
	maxSelectionMiB     = 1 << 16
	// deltaIdleIntervals is how many idle flush intervals a delta series is kept when
	// series_expiration is 0.
	deltaIdleIntervals = 5
)

// defaultHistogramBucketsMs are spanmetrics' default explicit bounds, in milliseconds.
var defaultHistogramBucketsMs = []float64{
	2, 4, 6, 8, 10, 50, 100, 200, 400, 800, 1000, 1400, 2000, 5000, 10_000, 15_000,
}

const (
	delta      = "AGGREGATION_TEMPORALITY_DELTA"
	cumulative = "AGGREGATION_TEMPORALITY_CUMULATIVE"
)

// Dimension is one entry of a dimensions list: exactly one of Name and Glob.
type Dimension struct {
	// Name is an attribute added to the metrics, looked up on the span, then on the resource
	// (for events: span, event, resource).
	Name string `mapstructure:"name"`
	// Default is Name's value when it is found nowhere; without it the attribute is left out.
	// Not allowed with Glob.
	Default *string `mapstructure:"default"`
	// Glob adds every span, event or resource attribute whose key matches the pattern, each
	// as its own attribute, with the value of the first place it is found in that order
	// (spanmetrics' syntax: '.' separates segments, `*` matches within one, `**` across
	// several; `k8s.*.name`, `db.**.name`). A key a named dimension or a built-in attribute
	// already labels is left to it.
	Glob string `mapstructure:"glob"`
	// prevent unkeyed literal initialization
	_ struct{}
}

// Config is the configuration of the tracemetrics connector.
type Config struct {
	// Dimensions are added to every metric on top of service.name, span.name, span.kind,
	// status.code and collector.instance.id: named attributes, or glob patterns of attribute
	// keys. Default: none.
	Dimensions []Dimension `mapstructure:"dimensions"`
	// CallsDimensions are added to the calls metric only. Default: none.
	CallsDimensions []Dimension `mapstructure:"calls_dimensions"`
	// ExcludeDimensions removes built-in attributes (service.name, span.name, span.kind,
	// status.code, collector.instance.id) from the metrics. Default: none.
	ExcludeDimensions []string `mapstructure:"exclude_dimensions"`

	// DimensionsCacheSize is accepted for compatibility and ignored (deprecated in spanmetrics
	// in favour of aggregation_cardinality_limit; our series store has no such cache).
	DimensionsCacheSize int `mapstructure:"dimensions_cache_size"`

	// ResourceMetricsCacheSize is the number of resources (distinct resource attribute sets)
	// kept; beyond it the least recently seen resources are dropped with their series at the
	// next flush. Default 1000.
	ResourceMetricsCacheSize int `mapstructure:"resource_metrics_cache_size"`

	// ResourceMetricsKeyAttributes limits the resource attributes that identify a resource.
	// Empty (the default) means all of them.
	ResourceMetricsKeyAttributes []string `mapstructure:"resource_metrics_key_attributes"`

	// AggregationTemporality is AGGREGATION_TEMPORALITY_CUMULATIVE (the default) or
	// AGGREGATION_TEMPORALITY_DELTA; any other value means cumulative, as in spanmetrics.
	AggregationTemporality string `mapstructure:"aggregation_temporality"`

	// Histogram configures the duration histogram.
	Histogram HistogramConfig `mapstructure:"histogram"`

	// MetricsFlushInterval is the time between two emissions of metrics. Default 60s.
	MetricsFlushInterval time.Duration `mapstructure:"metrics_flush_interval"`

	// MetricsExpiration drops a resource, with all its series, when no span of it was seen for
	// this long. 0 (the default) means never.
	MetricsExpiration time.Duration `mapstructure:"metrics_expiration"`

	// TimestampCacheSize is accepted and validated for compatibility (spanmetrics sizes its
	// LRU of delta start times with it, by default 10 × resource_metrics_cache_size, at least
	// 1000). The start timestamp of each delta series is kept in the series store itself, so
	// there is no cache to size.
	TimestampCacheSize *int `mapstructure:"metric_timestamp_cache_size"`

	// Namespace prefixes the metric names. Default "traces.span.metrics".
	Namespace string `mapstructure:"namespace"`

	// Exemplars configures exemplars on the metrics.
	Exemplars ExemplarsConfig `mapstructure:"exemplars"`

	// Events configures the events metric (a count of span events).
	Events EventsConfig `mapstructure:"events"`

	// IncludeInstrumentationScope lists instrumentation scope names whose spans get
	// span.instrumentation.scope.name/version attributes. Default: none.
	IncludeInstrumentationScope []string `mapstructure:"include_instrumentation_scope"`

	// AggregationCardinalityLimit caps the series of each metric per resource; spans of new
	// series beyond it go to the resource's otel.metric.overflow=true series. 0 (the default)
	// means no limit.
	AggregationCardinalityLimit int `mapstructure:"aggregation_cardinality_limit"`

	// AddResourceAttributes copies resource attributes to the output resource even when the
	// connector.spanmetrics.excludeResourceMetrics feature gate is enabled. Default false.
	AddResourceAttributes bool `mapstructure:"add_resource_attributes"`

	// EnableMetricsSamplingMethod adds the attribute sampling.method to every series, as
	// spanmetrics does: "extrapolated" for spans counted by an adjusted count (a valid
	// tracestate threshold, or sampling.attribute), "counted" for the others, so the two are
	// separate series and a query can tell estimated counts from exact ones. Needs
	// sampling.weighted. Default false.
	EnableMetricsSamplingMethod bool `mapstructure:"enable_metrics_sampling_method"`

	// MaxSeries caps the number of series of each family across all resources: RED series
	// (one label set shared by calls and duration) unless calls_dimensions or
	// histogram.dimensions split them, and events series apart. Spans of new series beyond it
	// go to the resource's otel.metric.overflow=true series of their span kind and status code,
	// which keep service.name, span.kind and status.code: totals, and calls and errors per
	// service and kind, stay exact. 0 means no limit. Default 500,000.
	MaxSeries int `mapstructure:"max_series"`

	// MaxSeriesPerService caps the series of each metric per service.name the same way: a
	// budget per service, so that a service whose series explode overflows alone and the
	// others keep getting new series. 0 (the default) means no limit.
	MaxSeriesPerService int `mapstructure:"max_series_per_service"`

	// MaxCardinalityPerLabel caps the distinct values each named dimension (a label) has per
	// service.name: a new series with a value beyond them is counted in the series with that
	// value replaced by __cardinality_overflow__, which keeps every other attribute (service,
	// span name, kind, status, the other dimensions). Values of series that exist keep theirs;
	// after a label refused a value it admits no new one for series_expiration (at least 5
	// flush intervals). sampling.method and glob dimensions are not limited. 0 (the default)
	// means no limit.
	MaxCardinalityPerLabel int `mapstructure:"max_cardinality_per_label"`

	// SeriesExpiration drops a single series that has seen no span for this long (unlike
	// metrics_expiration, which works on whole resources), after exporting it one last time,
	// as spanmetrics does, so that the memory of a cardinality burst comes back. 0 means:
	// never with cumulative temporality; after 5 idle flush intervals with delta temporality.
	// Default 5m (spanmetrics: 0, never).
	SeriesExpiration time.Duration `mapstructure:"series_expiration"`

	// RingSize is the capacity of the intake ring between ConsumeTraces callers and the
	// aggregator, in batches (one per ConsumeTraces call), rounded up to a power of two.
	// When it is full, ConsumeTraces waits (bounded by its context). Default 1024.
	RingSize int `mapstructure:"ring_size"`

	// RingMemoryMiB bounds, in MiB, the reduced batches handed to the aggregator and not yet
	// applied (queued in the ring, or drained and being applied), and again the batches kept
	// for reuse. A ConsumeTraces call whose batch would pass it waits as on a full ring.
	// ring_size counts batches, and one batch of ten thousand new series is a thousand times
	// one of ten: without a bound in bytes, receivers on many cores that outpace the one
	// aggregator fill the ring with large batches, and memory grows with the cores. A batch
	// larger than the bound passes alone. 0 means the default, 64.
	RingMemoryMiB int `mapstructure:"ring_memory_mib"`

	// SpanName rewrites the span names the metrics are keyed by (internal/reduce): semantic
	// conventions, rules, and clustering (clustering.go; span_name.clustering: enabled false,
	// dry_run false, max_children 50, max_templates_per_service 500, template_expiration 1h).
	// Default: off, span names are used as they are.
	SpanName SpanNameConfig `mapstructure:"span_name"`

	// Sampling weighs spans by their adjusted count (internal/reduce). Default: weighted.
	Sampling SamplingConfig `mapstructure:"sampling"`

	// CapSelection decides which series max_series and max_series_per_service keep once they
	// are full (internal/aggregate). Default: the busiest, by traffic.
	CapSelection CapSelectionConfig `mapstructure:"cap_selection"`

	// LateSpans is what becomes of spans whose end time is far from now (latespans.go).
	LateSpans LateSpansConfig `mapstructure:"late_spans"`

	// Grafana Tempo metrics-generator's keys (config_tempo.go; README.md, "Coming from
	// Tempo"), one block per key.

	// FilterPolicies keeps or drops spans before they are counted, by resource and span
	// attributes, kind, status and name (Tempo's filter_policies). Dropped spans are counted in
	// the filtered_spans telemetry. Default: none, every span counts.
	FilterPolicies []spanfilter.Policy `mapstructure:"filter_policies"`

	// DimensionMappings add labels whose value joins several attributes (Tempo's
	// dimension_mappings). Default: none.
	DimensionMappings []DimensionMapping `mapstructure:"dimension_mappings"`

	// IntrinsicDimensions switches the built-in labels on and off by Tempo's names; unset
	// entries follow exclude_dimensions. Default: status_message off, the others on.
	IntrinsicDimensions IntrinsicDimensions `mapstructure:"intrinsic_dimensions"`

	// SpanMultiplierKey is Tempo's name for sampling.attribute; set one or the other (or both
	// alike). Default "".
	SpanMultiplierKey string `mapstructure:"span_multiplier_key"`

	// EnableTargetInfo puts the resource attributes on the output even when the
	// connector.spanmetrics.excludeResourceMetrics gate is on (as add_resource_attributes),
	// for a Prometheus exporter to render as target_info. Default false: resource attributes
	// go on the output unless that gate is on.
	EnableTargetInfo bool `mapstructure:"enable_target_info"`

	// TargetInfoExcludedDimensions are resource attributes left out of the output resource,
	// hence out of target_info, and out of the resource's identity. Default: none.
	TargetInfoExcludedDimensions []string `mapstructure:"target_info_excluded_dimensions"`
}

// CapSelectionConfig configures how max_series and max_series_per_service choose the series
// that keep their own series once full (aggregation_cardinality_limit is spanmetrics' and
// always first come, first served).
type CapSelectionConfig struct {
	// By is "traffic" (the default): at each flush the refused series that received the
	// most spans take the place of the series that received the fewest (fewer than half as
	// many), so the busiest keep their own series; or "arrival": the first series keep their
	// place until they expire, as before.
	By string `mapstructure:"by"`
	// MemoryMiB bounds, in MiB, the tables that count the spans of refused series, exactly,
	// for the selection, all families together: 40 bytes a slot, tables of a power of two
	// slots, at most 3/4 full once they may not grow (16 MiB: 262,144 slots, ~196,000 refused
	// series at once). Beyond it, a refused series seen once makes
	// room for another one, and busier ones keep being counted. 0 means the default, 16.
	MemoryMiB int `mapstructure:"memory_mib"`
	// SketchSize is accepted and ignored (the size of the Space-Saving sketch the selection
	// used before it counted refused series exactly; memory_mib bounds that count).
	SketchSize int `mapstructure:"sketch_size"`
	// prevent unkeyed literal initialization
	_ struct{}
}

const (
	selectByTraffic = "traffic"
	selectByArrival = "arrival"
)

func (c *CapSelectionConfig) validate() error {
	var errs []error
	if c.By != "" && c.By != selectByTraffic && c.By != selectByArrival {
		errs = append(errs, fmt.Errorf("cap_selection.by: %q, use %q or %q", c.By, selectByTraffic, selectByArrival))
	}
	if c.MemoryMiB < 0 || c.MemoryMiB > maxSelectionMiB {
		errs = append(errs, fmt.Errorf("cap_selection.memory_mib: %v is out of range, use 0 (default %d) or 1..%d", c.MemoryMiB, defaultSelectionMiB, maxSelectionMiB))
	}
	return errors.Join(errs...)
}

// HistogramConfig configures the duration histogram.
type HistogramConfig struct {
	// Disable turns the duration histogram off. Default false.
	Disable bool `mapstructure:"disable"`
	// Unit is "ms" (the default) or "s".
	Unit Unit `mapstructure:"unit"`
	// Exponential selects a base-2 exponential histogram.
	Exponential configoptional.Optional[ExponentialHistogramConfig] `mapstructure:"exponential"`
	// Explicit selects explicit bucket bounds.
	Explicit configoptional.Optional[ExplicitHistogramConfig] `mapstructure:"explicit"`
	// Dimensions are added to the duration metric only. Default: none.
	Dimensions []Dimension `mapstructure:"dimensions"`
	// prevent unkeyed literal initialization
	_ struct{}
}

// ExemplarsConfig configures exemplars.
type ExemplarsConfig struct {
	// Enabled attaches exemplars (trace and span IDs) to the calls and duration metrics.
	Enabled bool `mapstructure:"enabled"`
	// MaxPerDataPoint bounds the exemplars of one data point per flush interval. Default 5.
	MaxPerDataPoint int `mapstructure:"max_per_data_point"`
	// SlowThreshold (ours, tracegraph's key), when positive, lets exemplars name only spans that
	// failed or lasted at least this long: the spans the Elasticsearch branch stores
	// (configs/kafka-gateway.yaml keeps errors and spans of at least SLOW_THRESHOLD_NS), so that
	// every exemplar opens a stored span. Set it to that threshold. Default 0: any span.
	SlowThreshold time.Duration `mapstructure:"slow_threshold"`
	// prevent unkeyed literal initialization
	_ struct{}
}

// ExponentialHistogramConfig configures the exponential histogram.
type ExponentialHistogramConfig struct {
	// MaxSize is the maximum number of buckets per data point. 0 means 160.
	MaxSize int32 `mapstructure:"max_size"`
	// prevent unkeyed literal initialization
	_ struct{}
}

// ExplicitHistogramConfig configures explicit buckets.
type ExplicitHistogramConfig struct {
	// Buckets is the list of durations representing explicit histogram buckets.
	// Default: 2ms 4ms 6ms 8ms 10ms 50ms 100ms 200ms 400ms 800ms 1s 1.4s 2s 5s 10s 15s.
	Buckets []time.Duration `mapstructure:"buckets"`
	// prevent unkeyed literal initialization
	_ struct{}
}

// EventsConfig configures the events metric.
type EventsConfig struct {
	// Enabled turns the events metric on. Default false.
	Enabled bool `mapstructure:"enabled"`
	// Dimensions are added to the events metric; required when enabled.
	Dimensions []Dimension `mapstructure:"dimensions"`
	// prevent unkeyed literal initialization
	_ struct{}
}

// SamplingConfig configures sampling weights: a span kept by a probabilistic sampler stands
// for 1/p spans (its adjusted count), and counts as that many.
type SamplingConfig struct {
	// Weighted counts each span by its adjusted count: from a valid OpenTelemetry threshold
	// in its W3C tracestate (`ot=th:…`, as spanmetrics v0.165.1 does), else from Attribute.
	// Spans without either count 1. false counts every span 1 whatever it carries (what
	// spanmetrics did up to v0.145.0). Default true.
	Weighted bool `mapstructure:"weighted"`
	// Attribute names a span attribute holding the sampling probability p in (0, 1] (a double,
	// an int or a numeric string) that a span was kept with; the span counts 1/p. It is read
	// only when the tracestate has no valid threshold, on the span, then on its resource (as
	// Tempo reads span_multiplier_key, its name for this key). Empty (the default): not read.
	Attribute string `mapstructure:"attribute"`
	// prevent unkeyed literal initialization
	_ struct{}
}

// validate checks the block, with span_multiplier_key, Tempo's name for its attribute.
func (c SamplingConfig) validate(spanMultiplierKey string) error {
	if c.Attribute != "" && !c.Weighted {
		return errors.New("sampling.attribute: set, but sampling.weighted is false: the attribute would be ignored")
	}
	if spanMultiplierKey != "" && !c.Weighted {
		return errors.New("span_multiplier_key: set, but sampling.weighted is false: the attribute would be ignored")
	}
	if spanMultiplierKey != "" && c.Attribute != "" && spanMultiplierKey != c.Attribute {
		return fmt.Errorf("span_multiplier_key: %q, but sampling.attribute is %q: they are one setting, set one", spanMultiplierKey, c.Attribute)
	}
	return nil
}

// multiplierAttribute is the attribute that holds a span's sampling probability:
// sampling.attribute, or Tempo's span_multiplier_key (validate makes them agree).
func (c *Config) multiplierAttribute() string {
	if c.Sampling.Attribute != "" {
		return c.Sampling.Attribute
	}
	return c.SpanMultiplierKey
}

// Unit is the unit of the duration histogram.
type Unit int8

const (
	// Milliseconds is "ms".
	Milliseconds Unit = iota
	// Seconds is "s".
	Seconds
)

var (
	_ encoding.TextMarshaler   = (*Unit)(nil)
	_ encoding.TextUnmarshaler = (*Unit)(nil)
)

func (u Unit) String() string {
	switch u {
	case Milliseconds:
		return "ms"
	case Seconds:
		return "s"
	}
	return ""
}

// MarshalText implements encoding.TextMarshaler.
func (u Unit) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (u *Unit) UnmarshalText(text []byte) error {
	switch strings.ToLower(string(text)) {
	case "ms":
		*u = Milliseconds
	case "s":
		*u = Seconds
	default:
		return fmt.Errorf("unknown Unit %q, allowed units are %q and %q", strings.ToLower(string(text)), "ms", "s")
	}
	return nil
}

// nanosPer returns the number of nanoseconds in one unit.
func (u Unit) nanosPer() int64 {
	if u == Seconds {
		return int64(time.Second)
	}
	return int64(time.Millisecond)
}

var (
	_ component.Config  = (*Config)(nil)
	_ confmap.Validator = (*Config)(nil)
)

// Validate checks the configuration; every error names the key at fault.
func (c *Config) Validate() error {
	var errs []error
	if err := validateDimensions(c.Dimensions, c.builtinKeys()); err != nil {
		errs = append(errs, fmt.Errorf("dimensions: %w", err))
	}
	if err := validateDimensions(c.CallsDimensions, c.builtinKeys(), c.Dimensions...); err != nil {
		errs = append(errs, fmt.Errorf("calls_dimensions: %w", err))
	}
	if err := validateDimensions(c.Histogram.Dimensions, c.builtinKeys(), c.Dimensions...); err != nil {
		errs = append(errs, fmt.Errorf("histogram.dimensions: %w", err))
	}
	if c.Events.Enabled {
		if len(c.Events.Dimensions) == 0 {
			errs = append(errs, errors.New("events.dimensions: no dimensions configured for events"))
		}
		if err := validateDimensions(c.Events.Dimensions, c.builtinKeys(), c.Dimensions...); err != nil {
			errs = append(errs, fmt.Errorf("events.dimensions: %w", err))
		}
	}
	if c.Histogram.Explicit.HasValue() && c.Histogram.Exponential.HasValue() {
		errs = append(errs, errors.New("histogram: use either `explicit` or `exponential` buckets histogram"))
	}
	if e := c.Histogram.Explicit.Get(); c.Histogram.Explicit.HasValue() && e != nil {
		for i := 1; i < len(e.Buckets); i++ {
			if e.Buckets[i] <= e.Buckets[i-1] {
				errs = append(errs, fmt.Errorf("histogram.explicit.buckets: must be strictly increasing, %v follows %v", e.Buckets[i], e.Buckets[i-1]))
				break
			}
		}
	}
	if c.MetricsFlushInterval < 0 {
		errs = append(errs, fmt.Errorf("metrics_flush_interval: %v, the duration should be positive", c.MetricsFlushInterval))
	}
	if c.MetricsExpiration < 0 {
		errs = append(errs, fmt.Errorf("metrics_expiration: %v, the duration should be positive", c.MetricsExpiration))
	}
	if c.GetAggregationTemporality() == pmetric.AggregationTemporalityDelta && c.TimestampCacheSize != nil && *c.TimestampCacheSize <= 0 {
		errs = append(errs, fmt.Errorf("metric_timestamp_cache_size: %v, the maximum number of the items in the cache should be positive", *c.TimestampCacheSize))
	}
	if c.AggregationCardinalityLimit < 0 {
		errs = append(errs, fmt.Errorf("aggregation_cardinality_limit: %v, the limit should be positive", c.AggregationCardinalityLimit))
	}
	if c.Exemplars.Enabled && c.Exemplars.MaxPerDataPoint < 0 {
		errs = append(errs, fmt.Errorf("exemplars.max_per_data_point: %v, the value should be positive", c.Exemplars.MaxPerDataPoint))
	}
	if c.Exemplars.SlowThreshold < 0 {
		errs = append(errs, fmt.Errorf("exemplars.slow_threshold: %v, the duration should not be negative", c.Exemplars.SlowThreshold))
	}
	if c.ResourceMetricsCacheSize <= 0 {
		errs = append(errs, fmt.Errorf("resource_metrics_cache_size: %v, the value should be positive", c.ResourceMetricsCacheSize))
	}
	if c.MaxSeries < 0 {
		errs = append(errs, fmt.Errorf("max_series: %v, the value should be positive or 0 (no limit)", c.MaxSeries))
	}
	if c.MaxSeriesPerService < 0 {
		errs = append(errs, fmt.Errorf("max_series_per_service: %v, the value should be positive or 0 (no limit)", c.MaxSeriesPerService))
	}
	if c.MaxCardinalityPerLabel < 0 {
		errs = append(errs, fmt.Errorf("max_cardinality_per_label: %v, the value should be positive or 0 (no limit)", c.MaxCardinalityPerLabel))
	}
	if c.SeriesExpiration < 0 {
		errs = append(errs, fmt.Errorf("series_expiration: %v, the duration should be positive", c.SeriesExpiration))
	}
	if c.RingSize < 0 || c.RingSize == 1 || c.RingSize > maxRingSize {
		errs = append(errs, fmt.Errorf("ring_size: %v is out of range, use 0 (default %d) or 2..%d", c.RingSize, defaultRingSize, maxRingSize))
	}
	if c.RingMemoryMiB < 0 || c.RingMemoryMiB > maxRingMemoryMiB {
		errs = append(errs, fmt.Errorf("ring_memory_mib: %v is out of range, use 0 (default %d) or 1..%d", c.RingMemoryMiB, defaultRingMemoryMiB, maxRingMemoryMiB))
	}
	if err := c.SpanName.validate(); err != nil {
		errs = append(errs, err)
	}
	if c.EnableMetricsSamplingMethod && !c.Sampling.Weighted {
		errs = append(errs, errors.New("enable_metrics_sampling_method: set, but sampling.weighted is false: no span would be extrapolated, every series would say counted"))
	}
	if err := c.Sampling.validate(c.SpanMultiplierKey); err != nil {
		errs = append(errs, err)
	}
	if err := c.CapSelection.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.LateSpans.Validate("late_spans"); err != nil {
		errs = append(errs, err)
	}
	if err := validateTempoKeys(c); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// GetAggregationTemporality converts the configured string into a temporality: cumulative
// unless delta is spelled exactly.
func (c *Config) GetAggregationTemporality() pmetric.AggregationTemporality {
	if c.AggregationTemporality == delta {
		return pmetric.AggregationTemporalityDelta
	}
	return pmetric.AggregationTemporalityCumulative
}

// builtinKeys are the attribute names a dimension must not reuse, nor a glob match.
func (c *Config) builtinKeys() []string {
	keys := []string{series.ServiceNameKey, series.SpanKindKey, series.StatusCodeKey, series.SpanNameKey}
	if gateEnabled(includeCollectorInstanceIDGate) {
		keys = append(keys, series.CollectorInstanceKey)
	}
	if c.IntrinsicDimensions.StatusMessage {
		keys = append(keys, series.StatusMessageKey)
	}
	return keys
}

// validateDimensions checks one dimensions list (dimglob.ValidateList); shared is the list
// every family has, whose names the list must not repeat.
func validateDimensions(dims []Dimension, builtin []string, shared ...Dimension) error {
	list := make([]dimglob.Entry, len(dims))
	for i, d := range dims {
		list[i] = dimglob.Entry{Name: d.Name, Glob: d.Glob, HasDefault: d.Default != nil}
	}
	var names []string
	for _, d := range shared {
		if d.Name != "" {
			names = append(names, d.Name)
		}
	}
	return dimglob.ValidateList(list, builtin, names)
}
