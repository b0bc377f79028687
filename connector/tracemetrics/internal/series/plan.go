// Package series is the vocabulary the stages of the tracemetrics connector share: the plan
// every stage reads of the configuration (plan.go), series keys and their encoding (key.go,
// values.go, keyreader.go, attrs.go), the batch a producer hands to the aggregator (batch.go),
// the interval buffers the aggregator hands to the flusher (buffers.go), exponential
// histograms (expo.go, expoindex.go), exemplars and the overflow kinds. It holds data and the
// operations on it; the stages themselves are internal/reduce, internal/aggregate and
// internal/flush.
package series // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-red/otelcol-red/internal/buckets"
	"github.com/otelcol-red/otelcol-red/internal/latespans"
)

// Plan is what the data path needs to know of the configuration, derived once from the
// connector's Config when it is built. The reducer, the aggregator and the flusher all read
// this one value, so no fact of the configuration is derived in two places.
type Plan struct {
	Layout // the attributes of a series: built-ins, families, dimension order

	IsDelta bool // aggregation_temporality is delta

	// Durations.
	UnitNanos float64           // nanoseconds per histogram unit (histogram.unit)
	Bounds    []float64         // explicit bounds in the histogram unit; nil when exponential or disabled
	Explicit  *buckets.Explicit // finds a duration's bucket in bounds; nil without bounds
	NB        int               // explicit buckets per histogram, len(bounds)+1; 0 when exponential or disabled
	ExpoSize  int32             // exponential max_size as go-expohisto clamps it; 0 when explicit or disabled

	Exemplars    int                 // exemplars per data point per interval; 0: off
	ExemplarSlow uint64              // exemplars.slow_threshold in ns: only failed spans or spans this long; 0: any
	KeyAttrs     map[string]struct{} // resource_metrics_key_attributes; nil: every attribute
	// ResourceDrop are resource attributes left out of a resource's identity and output
	// (target_info_excluded_dimensions); nil: none.
	ResourceDrop map[string]struct{}

	// Limits and expiry.
	CardLimit         int32 // aggregation_cardinality_limit; 0: none
	MaxSeries         int   // max_series; 0: none
	MaxService        int32 // max_series_per_service; 0: none
	MaxPerLabel       int   // max_cardinality_per_label; 0: none
	SeriesIdle        int64 // ns a series may stay idle before it expires; 0: never
	ResourceIdle      int64 // metrics_expiration in ns; 0: never
	ResourceCacheSize int   // resource_metrics_cache_size
	ByTraffic         bool  // cap_selection.by is traffic (internal/aggregate)
	SelectionBytes    int   // cap_selection.memory_mib in bytes, the default when 0

	RingSize      int           // ring_size, the default when 0
	RingBytes     int64         // ring_memory_mib in bytes, the default when 0
	FlushInterval time.Duration // metrics_flush_interval, the default when 0 or less

	Late latespans.Policy // late_spans

	// Output.
	CallsName, DurationName, EventsName string
	Unit                                string // of the duration metric
	CopyResource                        bool   // resource attributes go on the output
}

// BucketsOf returns the explicit buckets of a row of family f: nb for the family that observes
// durations, 0 for the others.
func (p *Plan) BucketsOf(f *Family) int {
	if f.Duration {
		return p.NB
	}
	return 0
}

// ExpoOf reports whether family f keeps exponential histograms.
func (p *Plan) ExpoOf(f *Family) bool { return f.Duration && p.NB == 0 }

// Temporality is the aggregation Temporality of every metric of the output.
func (p *Plan) Temporality() pmetric.AggregationTemporality {
	if p.IsDelta {
		return pmetric.AggregationTemporalityDelta
	}
	return pmetric.AggregationTemporalityCumulative
}
