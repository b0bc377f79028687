// Package kafkaaffinity is a traces exporter that writes OTLP to Kafka keyed
// by resource attributes (service.name by default), so every span of one
// service lands on the same partition and a gateway consuming that partition
// holds only that service's series. Hot keys are spread over a few
// partitions, trace by trace.
package kafkaaffinity // import "github.com/otelcol-red/otelcol-red/exporter/kafkaaffinity"

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/kafka/configkafka"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/otelcol-red/otelcol-red/exporter/kafkaaffinity/internal/metadata"
)

const (
	// defaultTopic is the stock kafka exporter's traces topic, so the stock
	// kafka receiver reads it without configuration.
	defaultTopic    = "otlp_spans"
	defaultEncoding = encodingProto
	// defaultPartitionBy keys by application, the unit whose series a gateway
	// should hold alone.
	defaultPartitionBy = "service.name"
	// defaultFallbackKey is a record key no real service.name is likely to
	// carry; resources missing a key attribute all share its partition.
	defaultFallbackKey = "_unkeyed"
	// defaultMaxKeyBytes bounds the record key and the rate tracker's memory
	// per key; a longer key is cut and suffixed with a hash of the whole.
	defaultMaxKeyBytes = 256
	// defaultHotInterval is the window over which key rates are measured.
	defaultHotInterval = 10 * time.Second
	// defaultHotFanout spreads a detected hot key over this many partitions.
	defaultHotFanout = 4
	// defaultMaxTrackedKeys bounds the rate tracker; keys beyond it are never
	// detected as hot (counted) but are still keyed and sent.
	defaultMaxTrackedKeys = 10_000
	// defaultTraceIDBuckets matches a topic of 16 partitions; a graph topic
	// is usually sized like the spans topic.
	defaultTraceIDBuckets = 16
)

// NewFactory creates the kafkaaffinity exporter factory.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithTraces(createTraces, metadata.TracesStability))
}

func createDefaultConfig() component.Config {
	return &Config{
		TimeoutSettings:  exporterhelper.NewDefaultTimeoutConfig(),
		QueueBatchConfig: configoptional.Some(exporterhelper.NewDefaultQueueConfig()),
		BackOffConfig:    configretry.NewDefaultBackOffConfig(),
		ClientConfig:     configkafka.NewDefaultClientConfig(),
		Producer:         configkafka.NewDefaultProducerConfig(),
		Topic:            defaultTopic,
		Encoding:         defaultEncoding,
		PartitionBy:      []string{defaultPartitionBy},
		FallbackKey:      defaultFallbackKey,
		MaxKeyBytes:      defaultMaxKeyBytes,
		KeyBy:            keyByResource,
		TraceIDBuckets:   defaultTraceIDBuckets,
		FollowLinks:      true,
		HotKeys: HotKeysConfig{
			Interval:       defaultHotInterval,
			Fanout:         defaultHotFanout,
			MaxTrackedKeys: defaultMaxTrackedKeys,
		},
	}
}

func createTraces(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Traces, error) {
	c := cfg.(*Config)
	exp, err := newExporter(c, set, clockwork.NewRealClock())
	if err != nil {
		return nil, err
	}
	return exporterhelper.NewTraces(ctx, set, cfg,
		exp.ConsumeTraces,
		exporterhelper.WithStart(exp.Start),
		exporterhelper.WithShutdown(exp.Shutdown),
		exporterhelper.WithTimeout(c.TimeoutSettings),
		exporterhelper.WithRetry(c.BackOffConfig),
		exporterhelper.WithQueue(c.QueueBatchConfig),
		// Records are built from copies: a retried request must find its
		// input intact.
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
	)
}
