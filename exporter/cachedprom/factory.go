// Package cachedprom is a Prometheus exporter that serves scrapes from a
// pre-rendered, pre-compressed snapshot instead of rendering on the request
// path.
package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/resourcetotelemetry"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/metadata"
)

const (
	// defaultEndpoint binds loopback only: exposing metrics to the network is
	// an explicit decision.
	defaultEndpoint         = "localhost:9464"
	defaultPath             = "/metrics"
	defaultMetricExpiration = 5 * time.Minute
	defaultRenderInterval   = time.Second
	// defaultMaxSeries is above tracemetrics' max_series, default or raised
	// up to 1,000,000 RED series, plus room for its overflow series, so that
	// tracemetrics' overflow governs and cachedprom never overflows.
	defaultMaxSeries = 1_001_000
	// defaultMaxConcurrentScrapes leaves room for several Prometheus
	// replicas and probes while bounding a flood of scrapes.
	defaultMaxConcurrentScrapes = 16
	// defaultMinScrapeInterval is below the shortest scrape_interval
	// Prometheus is run with, with room for a few scrapers sharing an
	// address, and long enough that a client in a loop costs ingest next
	// to nothing.
	defaultMinScrapeInterval = 250 * time.Millisecond
	defaultAddMetricSuffix   = true
)

// NewFactory creates the cachedprom exporter factory.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithMetrics(createMetrics, metadata.MetricsStability))
}

func createDefaultConfig() component.Config {
	server := confighttp.NewDefaultServerConfig()
	server.NetAddr.Endpoint = defaultEndpoint
	// The sending queue stays off, but a configuration that turns it on
	// (sending_queue: {enabled: true}, or any of its keys) gets the
	// exporterhelper's defaults, batching off unless configured, as the
	// prometheus exporter does; a zero queue would fail validation.
	queue := exporterhelper.NewDefaultQueueConfig()
	queue.Batch = configoptional.Default(*queue.Batch.GetOrInsertDefault())
	return &Config{
		ServerConfig:      server,
		QueueBatchConfig:  configoptional.Default(queue),
		ConstLabels:       map[string]string{},
		MetricExpiration:  defaultMetricExpiration,
		AddMetricSuffixes: defaultAddMetricSuffix,
		Path:              defaultPath,
		RenderInterval:    defaultRenderInterval,
		MaxSeries:         defaultMaxSeries,

		MaxConcurrentScrapes: defaultMaxConcurrentScrapes,
		MinScrapeInterval:    defaultMinScrapeInterval,
	}
}

func createMetrics(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Metrics, error) {
	c := cfg.(*Config)
	exp, err := newExporter(c, set, clockwork.NewRealClock())
	if err != nil {
		return nil, err
	}
	m, err := exporterhelper.NewMetrics(ctx, set, cfg,
		exp.ConsumeMetrics,
		exporterhelper.WithStart(exp.Start),
		exporterhelper.WithShutdown(exp.Shutdown),
		exporterhelper.WithQueue(c.QueueBatchConfig),
		// Ingest only reads the data; the store copies what it keeps.
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
	)
	if err != nil {
		return nil, err
	}
	// Resource attributes become labels in the prometheus exporter's
	// wrapper itself (it rewrites the pipeline's copy of the batch before
	// ingest), so they come out the same.
	g := exp.gates
	resourceLabels, legacy := c.resourceLabels(g.noResourceToTelemetry)
	if legacy {
		set.Logger.Warn("resource_to_telemetry_conversion is deprecated; use resource_constant_labels instead")
	}
	if g.ignoreAddMetricSuffixes && !c.AddMetricSuffixes && c.TranslationStrategy == "" {
		set.Logger.Warn("add_metric_suffixes is ignored while the " + disableAddMetricSuffixesGate +
			" feature gate is enabled (its default); set translation_strategy to UnderscoreEscapingWithoutSuffixes for names without suffixes")
	}
	return resourcetotelemetry.WrapMetricsExporter(resourceLabels, m), nil
}
