package kafkaaffinity // import "github.com/otelcol-red/otelcol-red/exporter/kafkaaffinity"

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-red/otelcol-red/exporter/kafkaaffinity/internal/metadata"
)

// telemetry is the exporter's own metrics, recorded once per request (never
// per span) through record*, so the data path never builds OTel options. The
// instruments are metadata.yaml's, generated into internal/metadata.
type telemetry struct {
	builder *metadata.TelemetryBuilder
	classes [numKeyClasses]metric.AddOption
}

func newTelemetry(set component.TelemetrySettings, hk *hotKeys) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	err = errors.Join(
		tb.RegisterExporterKafkaaffinityHotKeysCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(hk.hotNow()))
			return nil
		}),
		tb.RegisterExporterKafkaaffinityUntrackedKeysCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(hk.untracked.Load())
			return nil
		}),
	)
	if err != nil {
		tb.Shutdown()
		return nil, err
	}
	return &telemetry{
		builder: tb,
		classes: [numKeyClasses]metric.AddOption{
			classNormal:  metric.WithAttributeSet(attribute.NewSet(attribute.String("class", "normal"))),
			classHot:     metric.WithAttributeSet(attribute.NewSet(attribute.String("class", "hot"))),
			classTraceID: metric.WithAttributeSet(attribute.NewSet(attribute.String("class", "trace_id"))),
		},
	}, nil
}

// keyClass is how a record was keyed, the class attribute of the records and
// spans counters.
type keyClass int

const (
	classNormal  keyClass = iota // one record per partition_by key
	classHot                     // a hot key's sub-record
	classTraceID                 // a trace_id bucket's record (key_by: trace_id)
	numKeyClasses
)

func (t *telemetry) recordSent(ctx context.Context, class keyClass, records, spans int) {
	opt := t.classes[class]
	t.builder.ExporterKafkaaffinityRecords.Add(ctx, int64(records), opt)
	t.builder.ExporterKafkaaffinitySpans.Add(ctx, int64(spans), opt)
}

func (t *telemetry) recordKeying(ctx context.Context, fallbackSpans, cutKeys int) {
	if fallbackSpans > 0 {
		t.builder.ExporterKafkaaffinityFallbackSpans.Add(ctx, int64(fallbackSpans))
	}
	if cutKeys > 0 {
		t.builder.ExporterKafkaaffinityCutKeys.Add(ctx, int64(cutKeys))
	}
}

func (t *telemetry) shutdown() {
	t.builder.Shutdown()
}
