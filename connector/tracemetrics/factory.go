// Package tracemetrics is a traces → metrics connector that turns spans into RED metrics
// (calls, duration histograms, events), a drop-in for the contrib spanmetrics connector that
// aggregates without a lock on the ingest path. See README.md and ARCHITECTURE.md.
package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"context"

	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/flush"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/metadata"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/hash"
	"github.com/otelcol-red/otelcol-red/internal/latespans"
)

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
		CapSelection:             CapSelectionConfig{By: selectByTraffic, MemoryMiB: defaultSelectionMiB},
		LateSpans:                latespans.DefaultConfig(),
	}
}

func createTracesToMetrics(ctx context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Traces, error) {
	return newConnector(set.TelemetrySettings, cfg.(*Config), next, newDeps(ctx), instanceIDOf(set))
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
