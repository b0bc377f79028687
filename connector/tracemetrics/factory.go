// Package tracemetrics is a traces → metrics connector that turns spans into RED metrics
// (calls, duration histograms, events), a drop-in for the contrib spanmetrics connector that
// aggregates without a lock on the ingest path. See README.md and ARCHITECTURE.md.
package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/flush"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/metadata"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/hash"
)

// Defaults. spanmetrics' defaults are kept as they are; ours are chosen in README.md.
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
	// defaultSketchSize is cap_selection.sketch_size when 0: README.md ("Which series a cap
	// keeps") has the measurements.
	defaultSketchSize = 128
	maxSketchSize     = 1 << 16
	// deltaIdleIntervals is how many idle flush intervals a delta series is kept when
	// series_expiration is 0.
	deltaIdleIntervals = 5
)

// defaultHistogramBucketsMs are spanmetrics' default explicit bounds, in milliseconds.
var defaultHistogramBucketsMs = []float64{
	2, 4, 6, 8, 10, 50, 100, 200, 400, 800, 1000, 1400, 2000, 5000, 10_000, 15_000,
}

// NewFactory returns the factory of the tracemetrics connector.
func NewFactory() connector.Factory {
	return connector.NewFactory(
		metadata.Type,
		createDefaultConfig,
		connector.WithTracesToMetrics(createTracesToMetrics, metadata.TracesToMetricsStability),
	)
}

func createDefaultConfig() component.Config {
	unit := Milliseconds
	if gateEnabled(useSecondAsDefaultMetricsUnitGate) {
		unit = Seconds
	}
	return &Config{
		AggregationTemporality:   cumulative,
		ResourceMetricsCacheSize: defaultResourceMetricsCache,
		MetricsFlushInterval:     defaultFlushInterval,
		Histogram:                HistogramConfig{Unit: unit},
		Namespace:                DefaultNamespace,
		Exemplars:                ExemplarsConfig{MaxPerDataPoint: defaultMaxPerDataPoint},
		MaxSeries:                defaultMaxSeries,
		SeriesExpiration:         defaultSeriesExpiration,
		RingSize:                 defaultRingSize,
		RingMemoryMiB:            defaultRingMemoryMiB,
		Sampling:                 SamplingConfig{Weighted: true},
		SpanName:                 SpanNameConfig{Clustering: defaultClusteringConfig()},
		CapSelection:             CapSelectionConfig{By: selectByTraffic, SketchSize: defaultSketchSize},
	}
}

func createTracesToMetrics(ctx context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Traces, error) {
	return newConnector(set.TelemetrySettings, cfg.(*Config), next, newDeps(ctx), instanceIDOf(set))
}

// deps are what the connector is built with besides its configuration. The factory hands in
// the real ones; tests build the connector with a fake clock, smaller chunks or a colliding
// hash instead of changing fields after construction.
type deps struct {
	clock       clockwork.Clock     // the context's clock (clockwork.FromContext), else the real one
	chunkPoints int                 // data points per ConsumeMetrics call: chunkDataPoints
	keyHash     func([]byte) uint64 // hash of series identities and resource keys: hash.Sum64
}

func newDeps(ctx context.Context) deps {
	return deps{clock: clockwork.FromContext(ctx), chunkPoints: flush.ChunkDataPoints, keyHash: hash.Sum64}
}

// instanceIDOf returns the collector.instance.id of the collector's own resource. Like
// spanmetrics: the collector sets it; settings built from componenttest do not, hence the
// random fallback.
func instanceIDOf(set connector.Settings) string {
	if v, ok := set.Resource.Attributes().Get(series.CollectorInstanceKey); ok {
		return v.AsString()
	}
	return uuid.NewString()
}
