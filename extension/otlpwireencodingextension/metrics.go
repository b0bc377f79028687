package otlpwireencodingextension // import "github.com/otelcol-red/otelcol-red/extension/otlpwireencodingextension"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-red/otelcol-red/extension/otlpwireencodingextension/internal/metadata"
	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
)

// telemetry is the extension's own metrics, added to once per message through record*, with
// attribute sets built once.
type telemetry struct {
	builder *metadata.TelemetryBuilder
	// refused is the reason attribute by otlpwire.Refusal: why a message was refused (too_large:
	// longer than max_request_bytes; too_deep: nested beyond max_nesting).
	refused [otlpwire.Refusals]metric.AddOption
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	t := &telemetry{builder: tb}
	for re, name := range otlpwire.RefusalNames {
		t.refused[re] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", name)))
	}
	return t, nil
}

func (t *telemetry) recordSpans(ctx context.Context, spans int) {
	if spans > 0 {
		t.builder.ExtensionOtlpwireEncodingSpans.Add(ctx, int64(spans))
	}
}

// recordRefused counts one message refused with err, a decode error.
func (t *telemetry) recordRefused(ctx context.Context, err error) {
	t.builder.ExtensionOtlpwireEncodingRefusedMessages.Add(ctx, 1, t.refused[otlpwire.RefusalOf(err)])
}

func (t *telemetry) shutdown() {
	t.builder.Shutdown()
}
