package otlpwireencodingextension // import "github.com/otelcol-red/otelcol-red/extension/otlpwireencodingextension"

import (
	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
)

// Config holds the wire decoder's limits; the keys and their meaning are the otlpwire
// receiver's.
type Config struct {
	// MaxRequestBytes is the longest message the wire decoder accepts; a longer one is
	// refused (reason too_large), which the Kafka receiver treats as an unmarshalling
	// failure. 0 means the decoder's default, which is also this extension's, 64 MiB; at most
	// 2 GiB - 1. The Kafka receiver's fetch sizes bound messages first.
	MaxRequestBytes int `mapstructure:"max_request_bytes"`

	// MaxNesting is the deepest nesting of arrays and maps in one attribute value the wire
	// decoder accepts (a string is 0, an array of strings 1); a deeper value refuses the
	// message (reason too_deep). 0 means the default, 49, pdata's own maximum, which refuses
	// nothing the otlp_proto encoding accepts; 1 to 49.
	MaxNesting int `mapstructure:"max_nesting"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

// Validate checks the decoder's limits; its messages name the keys.
func (cfg *Config) Validate() error {
	return cfg.limits().Validate()
}

func (cfg *Config) limits() otlpwire.Limits {
	return otlpwire.Limits{MaxRequestBytes: cfg.MaxRequestBytes, MaxNesting: cfg.MaxNesting}
}
