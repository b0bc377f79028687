package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/dimglob"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/reduce"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/buckets"
)

// newPlan derives from cfg what the data path needs (internal/series.Plan).
func newPlan(cfg *Config, g followedGates, instanceID string) (*series.Plan, error) {
	l, err := newLayout(cfg, g, instanceID)
	if err != nil {
		return nil, err
	}
	p := &series.Plan{
		Layout:            l,
		IsDelta:           cfg.GetAggregationTemporality() == pmetric.AggregationTemporalityDelta,
		UnitNanos:         float64(cfg.Histogram.Unit.nanosPer()),
		CardLimit:         int32(cfg.AggregationCardinalityLimit),
		MaxSeries:         cfg.MaxSeries,
		MaxService:        int32(cfg.MaxSeriesPerService),
		MaxPerLabel:       cfg.MaxCardinalityPerLabel,
		ResourceIdle:      int64(cfg.MetricsExpiration),
		ResourceCacheSize: cfg.ResourceMetricsCacheSize,
		RingSize:          cfg.RingSize,
		RingBytes:         int64(cfg.RingMemoryMiB) << 20,
		FlushInterval:     cfg.MetricsFlushInterval,
		Late:              cfg.LateSpans.Resolve(),
		Unit:              cfg.Histogram.Unit.String(),
		CopyResource:      !g.excludeResourceMetrics || cfg.AddResourceAttributes || cfg.EnableTargetInfo,
		ResourceDrop:      resourceDrop(cfg.TargetInfoExcludedDimensions),
	}
	p.SeriesIdle = seriesIdleTime(cfg, p.IsDelta)
	p.ByTraffic = cfg.CapSelection.By != selectByArrival
	p.SelectionBytes = cfg.CapSelection.MemoryMiB << 20
	if p.SelectionBytes == 0 {
		p.SelectionBytes = defaultSelectionMiB << 20
	}
	switch {
	case cfg.Histogram.Disable:
	case cfg.Histogram.Exponential.HasValue():
		p.ExpoSize = defaultExpoMaxSize
		if e := cfg.Histogram.Exponential.Get(); e != nil && e.MaxSize != 0 {
			// go-expohisto's clamping, which spanmetrics relies on.
			switch {
			case e.MaxSize < 0:
			case e.MaxSize < 2:
				p.ExpoSize = 2
			case e.MaxSize > series.MaxExponentialSize:
				p.ExpoSize = series.MaxExponentialSize
			default:
				p.ExpoSize = e.MaxSize
			}
		}
	default:
		p.Bounds = histogramBounds(cfg)
		p.Explicit = buckets.NewExplicit(p.Bounds)
		p.NB = len(p.Bounds) + 1
	}
	if cfg.Exemplars.Enabled && cfg.Exemplars.MaxPerDataPoint > 0 {
		p.Exemplars = cfg.Exemplars.MaxPerDataPoint
		p.ExemplarSlow = uint64(max(cfg.Exemplars.SlowThreshold, 0))
	}
	if len(cfg.ResourceMetricsKeyAttributes) > 0 {
		p.KeyAttrs = make(map[string]struct{}, len(cfg.ResourceMetricsKeyAttributes))
		for _, k := range cfg.ResourceMetricsKeyAttributes {
			p.KeyAttrs[k] = struct{}{}
		}
	}
	if p.RingSize == 0 {
		p.RingSize = defaultRingSize
	}
	if p.RingBytes == 0 {
		p.RingBytes = defaultRingMemoryMiB << 20
	}
	if p.FlushInterval <= 0 {
		p.FlushInterval = defaultFlushInterval
	}
	namespace := cfg.Namespace
	if g.legacyMetricNames && namespace == DefaultNamespace {
		namespace = ""
	}
	p.CallsName = metricName(namespace, "calls")
	p.DurationName = metricName(namespace, "duration")
	p.EventsName = metricName(namespace, "events")
	return p, nil
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

func newLayout(cfg *Config, g followedGates, instanceID string) (series.Layout, error) {
	statusAttr := series.StatusCodeKey
	if g.useOtelStatusCode {
		statusAttr = series.OtelStatusCodeKey
	}
	// exclude_dimensions, and intrinsic_dimensions' entries set false (config_tempo.go).
	excluded := excludedBuiltins(cfg, statusAttr)
	l := series.Layout{
		WithService:       !slices.Contains(excluded, series.ServiceNameKey),
		WithName:          !slices.Contains(excluded, series.SpanNameKey),
		WithKind:          !slices.Contains(excluded, series.SpanKindKey),
		WithStatus:        !slices.Contains(excluded, statusAttr),
		WithStatusMessage: cfg.IntrinsicDimensions.StatusMessage,
		OtelStatusCode:    g.useOtelStatusCode,
		Scopes:            cfg.IncludeInstrumentationScope,
		CallsFamily:       -1, DurationFamily: -1, EventsFamily: -1,
	}
	if g.includeCollectorInstanceID && !slices.Contains(cfg.ExcludeDimensions, series.CollectorInstanceKey) {
		l.InstanceID = instanceID
	}
	add := func(f *series.Family) int {
		f.Index = uint8(len(l.Families))
		l.Families = append(l.Families, f)
		return int(f.Index)
	}
	withDuration := !cfg.Histogram.Disable
	if withDuration && (len(cfg.CallsDimensions) > 0 || len(cfg.Histogram.Dimensions) > 0) {
		l.CallsFamily = add(&series.Family{Calls: true, Dims: newDimensions(cfg.Dimensions, cfg.CallsDimensions)})
		l.DurationFamily = add(&series.Family{Duration: true, Dims: newDimensions(cfg.Dimensions, cfg.Histogram.Dimensions)})
	} else {
		l.CallsFamily = add(&series.Family{Calls: true, Duration: withDuration, Dims: newDimensions(cfg.Dimensions, cfg.CallsDimensions)})
		if withDuration {
			l.DurationFamily = l.CallsFamily
		}
	}
	if cfg.Events.Enabled {
		l.EventsFamily = add(&series.Family{Calls: true, Events: true, Dims: newDimensions(cfg.Dimensions, cfg.Events.Dimensions)})
	}
	if len(cfg.DimensionMappings) > 0 {
		for _, f := range l.Families {
			f.Dims = append(f.Dims, mappingDimensions(cfg.DimensionMappings)...)
		}
	}
	if cfg.EnableMetricsSamplingMethod {
		for _, f := range l.Families {
			f.Dims = append(f.Dims, series.Dimension{Name: series.SamplingMethodKey, SamplingMethod: true})
		}
	}
	for _, f := range l.Families {
		lists := [][]Dimension{cfg.Dimensions}
		switch {
		case f.Events:
			lists = append(lists, cfg.Events.Dimensions)
		case f.Calls:
			lists = append(lists, cfg.CallsDimensions)
		}
		if f.Duration && !f.Calls {
			lists = append(lists, cfg.Histogram.Dimensions)
		}
		var err error
		if f.Globs, err = newGlobs(&l, f, lists...); err != nil {
			return series.Layout{}, err
		}
	}
	return l, nil
}

// newDimensions returns the named dimensions of the lists, in order.
func newDimensions(lists ...[]Dimension) []series.Dimension {
	var dims []series.Dimension
	for _, list := range lists {
		for _, d := range list {
			if d.Name == "" {
				continue // a glob: newGlobs
			}
			dim := series.Dimension{Name: d.Name}
			if d.Default != nil {
				dim.HasDef = true
				dim.DefEnc = series.AppendStrValue(nil, *d.Default)
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
func newGlobs(l *series.Layout, f *series.Family, lists ...[]Dimension) (*dimglob.Answers, error) {
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
	for _, d := range f.Dims {
		skip = append(skip, d.Name) // sampling.method included
	}
	for _, k := range []struct {
		key     string
		written bool
	}{
		{series.ServiceNameKey, l.WithService},
		{series.SpanNameKey, l.WithName},
		{series.SpanKindKey, l.WithKind},
		{series.StatusCodeKey, l.WithStatus && !l.OtelStatusCode},
		{series.OtelStatusCodeKey, l.WithStatus && l.OtelStatusCode},
		{series.CollectorInstanceKey, l.InstanceID != ""},
		{series.ScopeNameKey, len(l.Scopes) > 0},
		{series.ScopeVersionKey, len(l.Scopes) > 0},
		{series.StatusMessageKey, l.WithStatusMessage},
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
func namerOf(c SpanNameConfig) *reduce.Namer {
	var rules []reduce.Rule
	for _, r := range c.Rules {
		nr, err := reduce.CompileRule(r.Service, r.Match, r.Replace)
		if err != nil {
			panic("BUG: tracemetrics: span_name.rules not validated: " + err.Error())
		}
		rules = append(rules, nr)
	}
	return reduce.NewNamer(c.FromSemanticConventions, rules, c.Clustering.clusterer(), c.Clustering.DryRun)
}
