package otlpwirereceiver // import "github.com/otelcol-red/otelcol-red/receiver/otlpwirereceiver"

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
	"github.com/otelcol-red/otelcol-red/receiver/otlpwirereceiver/internal/metadata"
)

// telemetry is the receiver's own metric, added to once per refused request through
// recordRefused, with attribute sets built once. Accepted and refused spans are counted by
// receiverhelper's ObsReport (receiver.go), as the otlp receiver counts them.
type telemetry struct {
	builder *metadata.TelemetryBuilder
	refused [numTransports][numReasons]metric.AddOption
}

// transport is the transport attribute: how a request came.
type transport int

const (
	transportGRPC transport = iota
	transportHTTP
	numTransports
)

// reason is the reason attribute: why a request was refused.
type reason int

const (
	reasonMalformed reason = iota // the decoder's ErrMalformed, or a JSON body pdata refused
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
	transports := [numTransports]string{transportGRPC: "grpc", transportHTTP: "http"}
	reasons := [numReasons]string{reasonMalformed: "malformed", reasonTooLarge: "too_large", reasonTooDeep: "too_deep"}
	for tr := range numTransports {
		for re := range numReasons {
			t.refused[tr][re] = metric.WithAttributeSet(attribute.NewSet(
				attribute.String("reason", reasons[re]),
				attribute.String("transport", transports[tr]),
			))
		}
	}
	return t, nil
}

// recordRefused counts one request refused with err, a decode error.
func (t *telemetry) recordRefused(ctx context.Context, tr transport, err error) {
	re := reasonMalformed
	switch {
	case errors.Is(err, otlpwire.ErrTooLarge):
		re = reasonTooLarge
	case errors.Is(err, otlpwire.ErrTooDeep):
		re = reasonTooDeep
	}
	t.builder.ReceiverOtlpwireRefusedRequests.Add(ctx, 1, t.refused[tr][re])
}

func (t *telemetry) shutdown() {
	t.builder.Shutdown()
}
