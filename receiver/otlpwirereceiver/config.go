package otlpwirereceiver // import "github.com/otelcol-red/otelcol-red/receiver/otlpwirereceiver"

import (
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
)

// Config is the otlp receiver's configuration, key for key, plus the wire decoder's limits, so
// that renaming `otlp` to `otlpwire` in a collector's YAML keeps every setting.
type Config struct {
	// Protocols is the otlp receiver's own type: protocols.grpc holds the gRPC server's
	// settings (endpoint, transport, tls, auth, max_recv_msg_size_mib, keepalive,
	// include_metadata, ...), protocols.http the HTTP server's (endpoint, tls, auth, cors,
	// compression_algorithms, max_request_body_size, ...) and traces_url_path. Its defaults
	// are the otlp receiver's: localhost:4317 and localhost:4318, /v1/traces. At least one
	// protocol must be set. metrics_url_path and logs_url_path are accepted and unused: this
	// receiver serves traces only.
	Protocols otlpreceiver.Protocols `mapstructure:"protocols"`

	// MaxRequestBytes is the longest protobuf request the wire decoder accepts; a longer one
	// is refused as malformed requests are (reason too_large). 0 means the decoder's default,
	// which is also this receiver's, 64 MiB: above the gRPC server's max_recv_msg_size_mib
	// (4 MiB by default) and the HTTP server's max_request_body_size (20 MiB by default), which
	// apply first, so that by default this limit refuses nothing they let through. At most
	// 2 GiB - 1.
	MaxRequestBytes int `mapstructure:"max_request_bytes"`

	// MaxNesting is the deepest nesting of arrays and maps in one attribute value the wire
	// decoder accepts (a string is 0, an array of strings 1); a deeper value refuses the
	// request (reason too_deep). 0 means the default, 49, pdata's own maximum, which refuses
	// nothing the otlp receiver accepts; 1 to 49.
	MaxNesting int `mapstructure:"max_nesting"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

// Validate checks the decoder's limits; the protocols validate themselves, as in the otlp
// receiver. The keys are top-level ones, so the decoder's error messages name them already.
func (cfg *Config) Validate() error {
	return cfg.limits().Validate()
}

func (cfg *Config) limits() otlpwire.Limits {
	return otlpwire.Limits{MaxRequestBytes: cfg.MaxRequestBytes, MaxNesting: cfg.MaxNesting}
}
