package otlpwireencodingextension // import "github.com/otelcol-red/otelcol-red/extension/otlpwireencodingextension"

import (
	"context"
	"errors"

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
	refused [numReasons]metric.AddOption
}

// reason is the reason attribute: why a message was refused.
type reason int

const (
	reasonMalformed reason = iota // the decoder's ErrMalformed
	reasonTooLarge                // the decoder's ErrTooLarge: longer than max_request_bytes
	reasonTooDeep                 // the decoder's ErrTooDeep: nested beyond max_nesting
	numReasons
)

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	t := &telemetry{builder: tb}
	for re, name := range [numReasons]string{reasonMalformed: "malformed", reasonTooLarge: "too_large", reasonTooDeep: "too_deep"} {
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
	re := reasonMalformed
	switch {
	case errors.Is(err, otlpwire.ErrTooLarge):
		re = reasonTooLarge
	case errors.Is(err, otlpwire.ErrTooDeep):
		re = reasonTooDeep
	}
	t.builder.ExtensionOtlpwireEncodingRefusedMessages.Add(ctx, 1, t.refused[re])
}

func (t *telemetry) shutdown() {
	t.builder.Shutdown()
}
