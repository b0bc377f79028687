package otlpwirereceiver // import "github.com/otelcol-red/otelcol-red/receiver/otlpwirereceiver"

import (
	"context"

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
	// refused is the reason and transport attributes by transport and otlpwire.Refusal
	// (malformed also for a JSON body pdata refused; too_large: longer than
	// max_request_bytes; too_deep: nested beyond max_nesting).
	refused [numTransports][otlpwire.Refusals]metric.AddOption
}

// transport is the transport attribute: how a request came.
type transport int

const (
	transportGRPC transport = iota
	transportHTTP
	numTransports
)

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	t := &telemetry{builder: tb}
	transports := [numTransports]string{transportGRPC: "grpc", transportHTTP: "http"}
	for tr := range numTransports {
		for re, reason := range otlpwire.RefusalNames {
			t.refused[tr][re] = metric.WithAttributeSet(attribute.NewSet(
				attribute.String("reason", reason),
				attribute.String("transport", transports[tr]),
			))
		}
	}
	return t, nil
}

// recordRefused counts one request refused with err, a decode error.
func (t *telemetry) recordRefused(ctx context.Context, tr transport, err error) {
	t.builder.ReceiverOtlpwireRefusedRequests.Add(ctx, 1, t.refused[tr][otlpwire.RefusalOf(err)])
}

func (t *telemetry) shutdown() {
	t.builder.Shutdown()
}
