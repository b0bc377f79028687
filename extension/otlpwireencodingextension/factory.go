// Package otlpwireencodingextension provides the otlpwire_encoding extension: a traces encoding
// for the Kafka receiver (`traces: encoding: otlpwire_encoding`) that validates each OTLP
// protobuf message with the wire decoder (internal/otlpwire) instead of unmarshalling it into
// pdata, and returns the message's bytes as wire traces (internal/wiretraces) for the
// components that read them.
package otlpwireencodingextension // import "github.com/otelcol-red/otelcol-red/extension/otlpwireencodingextension"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/otelcol-red/otelcol-red/extension/otlpwireencodingextension/internal/metadata"
	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
)

const (
	// defaultMaxRequestBytes is the wire decoder's default (64 MiB).
	defaultMaxRequestBytes = otlpwire.DefaultMaxRequestBytes
	// defaultMaxNesting is the wire decoder's default (49), pdata's own maximum.
	defaultMaxNesting = otlpwire.DefaultMaxNesting
)

// NewFactory returns the factory of the otlpwire_encoding extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(
		metadata.Type,
		createDefaultConfig,
		func(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
			return newEncoding(cfg.(*Config), set.TelemetrySettings)
		},
		metadata.ExtensionStability,
	)
}

func createDefaultConfig() component.Config {
	return &Config{
		MaxRequestBytes: defaultMaxRequestBytes,
		MaxNesting:      defaultMaxNesting,
	}
}
