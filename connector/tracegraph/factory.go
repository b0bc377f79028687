// Package tracegraph is a traces → metrics connector that builds a service graph (requests,
// failures and latencies between services), a drop-in for the contrib servicegraph connector
// that pairs spans without a lock on the ingest path. See README.md.
package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"context"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"

	"github.com/otelcol-red/otelcol-red/connector/tracegraph/internal/metadata"
	"github.com/otelcol-red/otelcol-red/internal/latespans"
)

// NewFactory returns the factory of the tracegraph connector.
func NewFactory() connector.Factory {
	return connector.NewFactory(
		metadata.Type,
		createDefaultConfig,
		connector.WithTracesToMetrics(createTracesToMetrics, metadata.TracesToMetricsStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{
		Store:               StoreConfig{TTL: defaultStoreTTL, MaxItems: defaultStoreMaxItems},
		CacheLoop:           defaultCacheLoop,
		StoreExpirationLoop: defaultStoreExpirationLoop,
		SeriesExpiration:    defaultSeriesExpiration,
		RingSize:            defaultRingSize,
		Sampling:            SamplingConfig{Weighted: true},
		Links:               LinksConfig{Enabled: true},
		Exemplars:           ExemplarsConfig{MaxPerDataPoint: defaultMaxExemplars},
		LateSpans:           latespans.DefaultConfig(),
	}
}

func createTracesToMetrics(ctx context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Traces, error) {
	return newConnector(set.TelemetrySettings, cfg.(*Config), next, clockwork.FromContext(ctx))
}
