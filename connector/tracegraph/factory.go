// Package tracegraph is a traces → metrics connector that builds a service graph (requests,
// failures and latencies between services), a drop-in for the contrib servicegraph connector
// that pairs spans without a lock on the ingest path. See README.md.
package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"

	"github.com/otelcol-red/otelcol-red/connector/tracegraph/internal/metadata"
)

// Defaults. servicegraph's are kept where they do not lose data; the store's are ours, chosen in
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
	maxRingSize             = 1 << 20
)

// defaultPeerAttributes name a virtual node when virtual_node_peer_attributes is unset.
var defaultPeerAttributes = []string{"peer.service", "db.name", "db.system"}

// defaultDatabaseNameAttributes is database_name_attributes when it is unset or empty.
var defaultDatabaseNameAttributes = []string{"db.name"}

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
	}
}

func createTracesToMetrics(ctx context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Traces, error) {
	return newConnector(set.TelemetrySettings, cfg.(*Config), next, clockwork.FromContext(ctx))
}
