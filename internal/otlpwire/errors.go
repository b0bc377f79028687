package otlpwire // import "github.com/otelcol-red/otelcol-red/internal/otlpwire"

import (
	"errors"
	"strconv"
)

// The refusals, one sentinel per cause, so that a caller counts them with errors.Is without
// parsing messages. Every error Decode returns wraps exactly one of them.
var (
	// ErrMalformed: the bytes are not an ExportTraceServiceRequest that pdata's unmarshaler
	// accepts (truncated or overlong varints, lengths past the end, a wrong wire type for a
	// known field, field number 0, a stray end-group, an ID of the wrong length, a value nested
	// deeper than pdata's recursion limit).
	ErrMalformed = errors.New("malformed OTLP protobuf")
	// ErrTooDeep: an attribute value nests arrays and maps deeper than Limits.MaxNesting.
	// pdata may accept such a request: this is a refusal of ours (see the package doc).
	ErrTooDeep = errors.New("attribute value nested too deep")
	// ErrTooLarge: the request is longer than Limits.MaxRequestBytes. pdata has no such limit:
	// this is a refusal of ours.
	ErrTooLarge = errors.New("request too large")
)

// DecodeError says where and why a request was refused. Errors are built only on the way
// out of a refused request, never on an accepted one, so the allocation they cost is paid
// by the sender of bad bytes.
type DecodeError struct {
	// Offset is the byte offset in the request where decoding stopped.
	Offset int
	// Reason says what was wrong, in a few words.
	Reason string
	// Kind is one of ErrMalformed, ErrTooDeep, ErrTooLarge.
	Kind error
}

func (e *DecodeError) Error() string {
	return "otlpwire: " + e.Kind.Error() + ": " + e.Reason + " at offset " + strconv.Itoa(e.Offset)
}

// Unwrap lets errors.Is match the sentinel.
func (e *DecodeError) Unwrap() error { return e.Kind }

func malformed(off int, reason string) error {
	return &DecodeError{Offset: off, Reason: reason, Kind: ErrMalformed}
}

func tooDeep(off int) error {
	return &DecodeError{Offset: off, Reason: "array or map beyond max_nesting", Kind: ErrTooDeep}
}

// Refusal is a refusal's cause as the components count it, the value of their reason
// attribute: the receiver, the Kafka encoding and the connectors name it alike.
type Refusal uint8

// The causes, one per sentinel.
const (
	RefusedMalformed Refusal = iota // ErrMalformed, or any other error (pdata refusing a body)
	RefusedTooLarge                 // ErrTooLarge
	RefusedTooDeep                  // ErrTooDeep
	Refusals                        // how many causes there are
)

// RefusalNames are the causes' attribute values.
var RefusalNames = [Refusals]string{"malformed", "too_large", "too_deep"}

// RefusalOf returns the cause of err, a refusal: malformed unless it wraps ErrTooLarge or
// ErrTooDeep.
func RefusalOf(err error) Refusal {
	switch {
	case errors.Is(err, ErrTooLarge):
		return RefusedTooLarge
	case errors.Is(err, ErrTooDeep):
		return RefusedTooDeep
	}
	return RefusedMalformed
}
