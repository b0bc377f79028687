package otlpwire

import (
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire/otlpwiretest"
)

// The tests' protobuf writer is otlpwiretest's: its primitives under short names, and the
// ascending-order encoding of a ptrace.Traces (what producers other than pdata write: fields
// in field-number order), with and without zero values.

var (
	pbVarint  = otlpwiretest.Varint
	pbTag     = otlpwiretest.Tag
	pbBytes   = otlpwiretest.Bytes
	pbString  = otlpwiretest.String
	pbUint    = otlpwiretest.Uint
	pbFixed64 = otlpwiretest.Fixed64
	pbFixed32 = otlpwiretest.Fixed32
	pbMsg     = otlpwiretest.Msg
)

// ascending encodes td with every message's fields in ascending field-number order; with
// zeros, fields equal to their zero value are written too.
type ascending struct{ zeros bool }

func (a ascending) traces(td ptrace.Traces) []byte {
	if a.zeros {
		return otlpwiretest.AscendingWithZeros(td)
	}
	return otlpwiretest.Ascending(td)
}
