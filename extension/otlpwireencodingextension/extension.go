package otlpwireencodingextension // import "github.com/otelcol-red/otelcol-red/extension/otlpwireencodingextension"

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces"
)

// encoding is the extension. The Kafka receiver (v0.165.1) loads a traces encoding named by an
// extension ID as a ptrace.Unmarshaler (its encoding.go, loadEncodingExtension) and calls
// UnmarshalTraces with each record's value, from as many goroutines as it consumes partitions.
type encoding struct {
	// decoders holds otlpwire.Decoders set to the configured limits: a decoder keeps the
	// tables it grew, so after the first messages validation allocates nothing, and
	// concurrent calls each take their own.
	decoders  sync.Pool
	telemetry *telemetry
}

var _ ptrace.Unmarshaler = (*encoding)(nil)

func newEncoding(cfg *Config, set component.TelemetrySettings) (*encoding, error) {
	tel, err := newTelemetry(set)
	if err != nil {
		return nil, err
	}
	e := &encoding{telemetry: tel}
	limits := cfg.limits()
	e.decoders.New = func() any {
		// MigrateDeprecatedScopeSpans stays false: the otlp_proto encoding
		// (ptrace.ProtoUnmarshaler) ignores the deprecated instrumentation_library_spans,
		// and so does the count here.
		return &otlpwire.Decoder{Limits: limits}
	}
	return e, nil
}

func (*encoding) Start(context.Context, component.Host) error { return nil }

func (e *encoding) Shutdown(context.Context) error {
	e.telemetry.shutdown()
	return nil
}

// UnmarshalTraces validates msg as the otlp_proto encoding would unmarshal it (the decoder
// refuses what ptrace.ProtoUnmarshaler refuses, and what is over the limits) and returns wire
// traces holding msg itself, not a copy. The Kafka receiver's records own their values: franz-go
// reads each fetch response, and decompresses each compressed batch, into a slice of its own,
// which records point into and nothing reuses (no memory pools are configured, and the
// receiver never recycles records); a message is therefore safe to keep as the traces' buffer.
// A refused message is an error, which the Kafka receiver counts as an unmarshalling failure
// and skips, as with otlp_proto.
func (e *encoding) UnmarshalTraces(msg []byte) (ptrace.Traces, error) {
	d := e.decoders.Get().(*otlpwire.Decoder)
	err := d.Decode(msg)
	spans := d.NumSpans()
	// An empty message leaves the decoder with nothing of msg: a pooled decoder must not
	// keep a fetch response alive.
	_ = d.Decode(nil)
	e.decoders.Put(d)
	// The Kafka receiver gives the encoding no context.
	ctx := context.Background()
	if err != nil {
		e.telemetry.recordRefused(ctx, err)
		return ptrace.Traces{}, err
	}
	e.telemetry.recordSpans(ctx, spans)
	return wiretraces.WrapTracesData(msg), nil
}
