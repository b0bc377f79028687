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
// per span) through record*, so the data path never builds OTel options.
type telemetry struct {
	records       metric.Int64Counter
	spans         metric.Int64Counter
	fallbackSpans metric.Int64Counter
	cutKeys       metric.Int64Counter
	registration  metric.Registration

	classes [numKeyClasses]metric.AddOption
}

func newTelemetry(set component.TelemetrySettings, hk *hotKeys) (*telemetry, error) {
	t := &telemetry{
		classes: [numKeyClasses]metric.AddOption{
			classNormal:  metric.WithAttributeSet(attribute.NewSet(attribute.String("class", "normal"))),
			classHot:     metric.WithAttributeSet(attribute.NewSet(attribute.String("class", "hot"))),
			classTraceID: metric.WithAttributeSet(attribute.NewSet(attribute.String("class", "trace_id"))),
		},
	}
	meter := set.MeterProvider.Meter(metadata.ScopeName)
	var errs, err error
	t.records, err = meter.Int64Counter("otelcol_exporter_kafkaaffinity_records",
		metric.WithDescription("Records acknowledged by Kafka, by key class (normal, hot, trace_id)."),
		metric.WithUnit("{record}"))
	errs = errors.Join(errs, err)
	t.spans, err = meter.Int64Counter("otelcol_exporter_kafkaaffinity_spans",
		metric.WithDescription("Spans in records acknowledged by Kafka, by key class (normal, hot, trace_id)."),
		metric.WithUnit("{span}"))
	errs = errors.Join(errs, err)
	t.fallbackSpans, err = meter.Int64Counter("otelcol_exporter_kafkaaffinity_fallback_spans",
		metric.WithDescription("Spans keyed by fallback_key because their resource lacked a partition_by attribute."),
		metric.WithUnit("{span}"))
	errs = errors.Join(errs, err)
	t.cutKeys, err = meter.Int64Counter("otelcol_exporter_kafkaaffinity_cut_keys",
		metric.WithDescription("Resources whose key exceeded max_key_bytes and was cut and hashed."),
		metric.WithUnit("{resource}"))
	errs = errors.Join(errs, err)
	hotG, err := meter.Int64ObservableGauge("otelcol_exporter_kafkaaffinity_hot_keys",
		metric.WithDescription("Keys fanned out now, listed or detected."), metric.WithUnit("{key}"))
	errs = errors.Join(errs, err)
	untrackedC, err := meter.Int64ObservableCounter("otelcol_exporter_kafkaaffinity_untracked_keys",
		metric.WithDescription("Key sightings not rate-measured because max_tracked_keys was reached."),
		metric.WithUnit("{key}"))
	errs = errors.Join(errs, err)
	if errs != nil {
		return nil, errs
	}
	t.registration, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(hotG, int64(hk.hotNow()))
		o.ObserveInt64(untrackedC, hk.untracked.Load())
		return nil
	}, hotG, untrackedC)
	return t, err
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
	t.records.Add(ctx, int64(records), opt)
	t.spans.Add(ctx, int64(spans), opt)
}

func (t *telemetry) recordKeying(ctx context.Context, fallbackSpans, cutKeys int) {
	if fallbackSpans > 0 {
		t.fallbackSpans.Add(ctx, int64(fallbackSpans))
	}
	if cutKeys > 0 {
		t.cutKeys.Add(ctx, int64(cutKeys))
	}
}

func (t *telemetry) shutdown() {
	if t.registration != nil {
		_ = t.registration.Unregister()
	}
}
