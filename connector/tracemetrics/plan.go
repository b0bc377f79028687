package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/dimglob"
	"github.com/otelcol-red/otelcol-red/internal/buckets"
)

// plan is what the data path needs to know of the configuration, derived once from Config
// when the connector is built (newPlan). The reducer, the aggregator and the flusher all read
// this one value, so no fact of the configuration is derived in two places.
type plan struct {
	layout // the attributes of a series: built-ins, families, dimension order

	isDelta bool // aggregation_temporality is delta

	// Durations.
	unitNanos float64           // nanoseconds per histogram unit (histogram.unit)
	bounds    []float64         // explicit bounds in the histogram unit; nil when exponential or disabled
	explicit  *buckets.Explicit // finds a duration's bucket in bounds; nil without bounds
	nb        int               // explicit buckets per histogram, len(bounds)+1; 0 when exponential or disabled
	expoSize  int32             // exponential max_size as go-expohisto clamps it; 0 when explicit or disabled

	exemplars int                 // exemplars per data point per interval; 0: off
	keyAttrs  map[string]struct{} // resource_metrics_key_attributes; nil: every attribute

	// Limits and expiry.
	cardLimit         int32 // aggregation_cardinality_limit; 0: none
	maxSeries         int   // max_series; 0: none
	maxService        int32 // max_series_per_service; 0: none
	seriesIdle        int64 // ns a series may stay idle before it expires; 0: never
	resourceIdle      int64 // metrics_expiration in ns; 0: never
	resourceCacheSize int   // resource_metrics_cache_size
	byTraffic         bool  // cap_selection.by is traffic (selection.go)
	sketchSize        int   // cap_selection.sketch_size, the default when 0

	ringSize      int           // ring_size, the default when 0
	ringBytes     int64         // ring_memory_mib in bytes, the default when 0
	flushInterval time.Duration // metrics_flush_interval, the default when 0 or less

	// Output.
	callsName, durationName, eventsName string
	unit                                string // of the duration metric
	copyResource                        bool   // resource attributes go on the output
}

func newPlan(cfg *Config, g followedGates, instanceID string) (*plan, error) {
	l, err := newLayout(cfg, g, instanceID)
	if err != nil {
		return nil, err
	}
	p := &plan{
		layout:            l,
		isDelta:           cfg.GetAggregationTemporality() == pmetric.AggregationTemporalityDelta,
		unitNanos:         float64(cfg.Histogram.Unit.nanosPer()),
		cardLimit:         int32(cfg.AggregationCardinalityLimit),
		maxSeries:         cfg.MaxSeries,
		maxService:        int32(cfg.MaxSeriesPerService),
		resourceIdle:      int64(cfg.MetricsExpiration),
		resourceCacheSize: cfg.ResourceMetricsCacheSize,
		ringSize:          cfg.RingSize,
		ringBytes:         int64(cfg.RingMemoryMiB) << 20,
		flushInterval:     cfg.MetricsFlushInterval,
		unit:              cfg.Histogram.Unit.String(),
		copyResource:      !g.excludeResourceMetrics || cfg.AddResourceAttributes,
	}
	p.seriesIdle = seriesIdleTime(cfg, p.isDelta)
	p.byTraffic = cfg.CapSelection.By != selectByArrival
	p.sketchSize = cfg.CapSelection.SketchSize
	if p.sketchSize == 0 {
		p.sketchSize = defaultSketchSize
	}
	switch {
	case cfg.Histogram.Disable:
	case cfg.Histogram.Exponential.HasValue():
		p.expoSize = defaultExpoMaxSize
		if e := cfg.Histogram.Exponential.Get(); e != nil && e.MaxSize != 0 {
			// go-expohisto's clamping, which spanmetrics relies on.
			switch {
			case e.MaxSize < 0:
			case e.MaxSize < 2:
				p.expoSize = 2
			case e.MaxSize > maxExponentialSize:
				p.expoSize = maxExponentialSize
			default:
				p.expoSize = e.MaxSize
			}
		}
	default:
		p.bounds = histogramBounds(cfg)
		p.explicit = buckets.NewExplicit(p.bounds)
		p.nb = len(p.bounds) + 1
	}
	if cfg.Exemplars.Enabled && cfg.Exemplars.MaxPerDataPoint > 0 {
		p.exemplars = cfg.Exemplars.MaxPerDataPoint
	}
	if len(cfg.ResourceMetricsKeyAttributes) > 0 {
		p.keyAttrs = make(map[string]struct{}, len(cfg.ResourceMetricsKeyAttributes))
		for _, k := range cfg.ResourceMetricsKeyAttributes {
			p.keyAttrs[k] = struct{}{}
		}
	}
	if p.ringSize == 0 {
		p.ringSize = defaultRingSize
	}
	if p.ringBytes == 0 {
		p.ringBytes = defaultRingMemoryMiB << 20
	}
	if p.flushInterval <= 0 {
		p.flushInterval = defaultFlushInterval
	}
	namespace := cfg.Namespace
	if g.legacyMetricNames && namespace == DefaultNamespace {
		namespace = ""
	}
	p.callsName = metricName(namespace, "calls")
	p.durationName = metricName(namespace, "duration")
	p.eventsName = metricName(namespace, "events")
	return p, nil
}

// bucketsOf returns the explicit buckets of a row of family f: nb for the family that observes
// durations, 0 for the others.
func (p *plan) bucketsOf(f *family) int {
	if f.duration {
		return p.nb
	}
	return 0
}

// expoOf reports whether family f keeps exponential histograms.
func (p *plan) expoOf(f *family) bool { return f.duration && p.nb == 0 }

// temporality is the aggregation temporality of every metric of the output.
func (p *plan) temporality() pmetric.AggregationTemporality {
	if p.isDelta {
		return pmetric.AggregationTemporalityDelta
	}
	return pmetric.AggregationTemporalityCumulative
}

func histogramBounds(cfg *Config) []float64 {
	if e := cfg.Histogram.Explicit.Get(); cfg.Histogram.Explicit.HasValue() && e != nil && e.Buckets != nil {
		div := float64(cfg.Histogram.Unit.nanosPer())
		bounds := make([]float64, len(e.Buckets))
		for i, b := range e.Buckets {
			bounds[i] = float64(b.Nanoseconds()) / div
		}
		return bounds
	}
	bounds := make([]float64, len(defaultHistogramBucketsMs))
	for i, v := range defaultHistogramBucketsMs {
		bounds[i] = v
		if cfg.Histogram.Unit == Seconds {
			bounds[i] = v / float64(time.Second.Milliseconds())
		}
	}
	return bounds
}

func metricName(namespace, name string) string {
	if namespace != "" {
		return namespace + "." + name
	}
	return name
}

// seriesIdleTime returns the series expiry in nanoseconds (see Config.SeriesExpiration).
func seriesIdleTime(cfg *Config, isDelta bool) int64 {
	if cfg.SeriesExpiration > 0 {
		return int64(cfg.SeriesExpiration)
	}
	if isDelta {
		return int64(deltaIdleIntervals * max(cfg.MetricsFlushInterval, time.Second))
	}
	return 0
}

func newLayout(cfg *Config, g followedGates, instanceID string) (layout, error) {
	l := layout{
		withService:    !slices.Contains(cfg.ExcludeDimensions, serviceNameKey),
		withName:       !slices.Contains(cfg.ExcludeDimensions, spanNameKey),
		withKind:       !slices.Contains(cfg.ExcludeDimensions, spanKindKey),
		otelStatusCode: g.useOtelStatusCode,
		scopes:         cfg.IncludeInstrumentationScope,
		callsFamily:    -1, durationFamily: -1, eventsFamily: -1,
	}
	if g.useOtelStatusCode {
		l.withStatus = !slices.Contains(cfg.ExcludeDimensions, otelStatusCodeKey)
	} else {
		l.withStatus = !slices.Contains(cfg.ExcludeDimensions, statusCodeKey)
	}
	if g.includeCollectorInstanceID && !slices.Contains(cfg.ExcludeDimensions, collectorInstanceKey) {
		l.instanceID = instanceID
	}
	add := func(f *family) int {
		f.index = uint8(len(l.families))
		l.families = append(l.families, f)
		return int(f.index)
	}
	withDuration := !cfg.Histogram.Disable
	if withDuration && (len(cfg.CallsDimensions) > 0 || len(cfg.Histogram.Dimensions) > 0) {
		l.callsFamily = add(&family{calls: true, dims: newDimensions(cfg.Dimensions, cfg.CallsDimensions)})
		l.durationFamily = add(&family{duration: true, dims: newDimensions(cfg.Dimensions, cfg.Histogram.Dimensions)})
	} else {
		l.callsFamily = add(&family{calls: true, duration: withDuration, dims: newDimensions(cfg.Dimensions, cfg.CallsDimensions)})
		if withDuration {
			l.durationFamily = l.callsFamily
		}
	}
	if cfg.Events.Enabled {
		l.eventsFamily = add(&family{calls: true, events: true, dims: newDimensions(cfg.Dimensions, cfg.Events.Dimensions)})
	}
	if cfg.EnableMetricsSamplingMethod {
		for _, f := range l.families {
			f.dims = append(f.dims, dimension{name: samplingMethodKey, samplingMethod: true})
		}
	}
	for _, f := range l.families {
		lists := [][]Dimension{cfg.Dimensions}
		switch {
		case f.events:
			lists = append(lists, cfg.Events.Dimensions)
		case f.calls:
			lists = append(lists, cfg.CallsDimensions)
		}
		if f.duration && !f.calls {
			lists = append(lists, cfg.Histogram.Dimensions)
		}
		var err error
		if f.globs, err = newGlobs(&l, f, lists...); err != nil {
			return layout{}, err
		}
	}
	return l, nil
}

// newDimensions returns the named dimensions of the lists, in order.
func newDimensions(lists ...[]Dimension) []dimension {
	var dims []dimension
	for _, list := range lists {
		for _, d := range list {
			if d.Name == "" {
				continue // a glob: newGlobs
			}
			dim := dimension{name: d.Name}
			if d.Default != nil {
				dim.hasDef = true
				dim.defEnc = appendStrValue(nil, *d.Default)
			}
			dims = append(dims, dim)
		}
	}
	return dims
}

// newGlobs compiles the glob dimensions of the lists of family f; nil without any. A key that
// f labels otherwise is never taken by a glob: its named dimensions, and every attribute the
// connector writes itself in this configuration. spanmetrics rejects globs that match a
// built-in attribute, or a name of their own list, when it validates; the keys it does not
// check (a name of another list, otel.status_code, sampling.method, the scope attributes)
// would give a data point the same attribute twice, and are left to their writer.
func newGlobs(l *layout, f *family, lists ...[]Dimension) (*dimglob.Answers, error) {
	var patterns []string
	for _, list := range lists {
		for _, d := range list {
			if d.Glob != "" {
				patterns = append(patterns, d.Glob)
			}
		}
	}
	if len(patterns) == 0 {
		return nil, nil
	}
	var skip []string
	for _, d := range f.dims {
		skip = append(skip, d.name) // sampling.method included
	}
	for _, k := range []struct {
		key     string
		written bool
	}{
		{serviceNameKey, l.withService},
		{spanNameKey, l.withName},
		{spanKindKey, l.withKind},
		{statusCodeKey, l.withStatus && !l.otelStatusCode},
		{otelStatusCodeKey, l.withStatus && l.otelStatusCode},
		{collectorInstanceKey, l.instanceID != ""},
		{instrumentationScopeNameKey, len(l.scopes) > 0},
		{instrumentationScopeVersionKey, len(l.scopes) > 0},
	} {
		if k.written {
			skip = append(skip, k.key)
		}
	}
	set, err := dimglob.NewSet(patterns, skip)
	if err != nil {
		return nil, fmt.Errorf("dimensions: %w", err)
	}
	return dimglob.NewAnswers(set), nil
}

// namerOf returns what renames span names under span_name; nil when nothing does.
func namerOf(c SpanNameConfig) *spanNamer {
	var rules []nameRule
	for _, r := range c.Rules {
		nr, err := compileNameRule(r)
		if err != nil {
			panic("BUG: tracemetrics: span_name.rules not validated: " + err.Error())
		}
		rules = append(rules, nr)
	}
	return newSpanNamer(c.FromSemanticConventions, rules, c.Clustering.clusterer(), c.Clustering.DryRun)
}
