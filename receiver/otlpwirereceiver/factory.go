// Package otlpwirereceiver provides the otlpwire receiver: the otlp receiver's protocols and
// configuration for traces, that validates each protobuf request with the wire decoder
// (internal/otlpwire) instead of unmarshalling it into pdata, and sends the request's bytes
// downstream as wire traces (internal/wiretraces) for the components that read them.
package otlpwirereceiver // import "github.com/otelcol-red/otelcol-red/receiver/otlpwirereceiver"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
	"github.com/otelcol-red/otelcol-red/receiver/otlpwirereceiver/internal/metadata"
)

const (
	// defaultMaxRequestBytes is the wire decoder's default (64 MiB), above the transports'
	// own default limits.
	defaultMaxRequestBytes = otlpwire.DefaultMaxRequestBytes
	// defaultMaxNesting is the wire decoder's default (49), pdata's own maximum.
	defaultMaxNesting = otlpwire.DefaultMaxNesting
)

// NewFactory returns the factory of the otlpwire receiver.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(
		metadata.Type,
		createDefaultConfig,
		receiver.WithTraces(createTraces, metadata.TracesStability),
	)
}

// createDefaultConfig takes the protocols' defaults from the otlp receiver's factory, so that
// they are its defaults at whatever release is built.
func createDefaultConfig() component.Config {
	otlp := otlpreceiver.NewFactory().CreateDefaultConfig().(*otlpreceiver.Config)
	return &Config{
		Protocols:       otlp.Protocols,
		MaxRequestBytes: defaultMaxRequestBytes,
		MaxNesting:      defaultMaxNesting,
	}
}

func createTraces(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Traces) (receiver.Traces, error) {
	return newReceiver(cfg.(*Config), set, next)
}
