package otlpwire // import "github.com/otelcol-red/otelcol-red/internal/otlpwire"

import (
	"errors"
	"fmt"
	"math"
)

const (
	// DefaultMaxRequestBytes is above the stock receivers' own defaults (gRPC 4 MiB, HTTP
	// 20 MiB), so that with their settings the decoder never refuses what they let through.
	DefaultMaxRequestBytes = 64 << 20
	// hardMaxRequestBytes keeps every offset of the index within a uint32 (and every
	// position within an int on 32-bit platforms).
	hardMaxRequestBytes = math.MaxInt32
	// pdataMaxNesting is the deepest nesting of arrays and maps pdata accepts on any path:
	// its recursion limit of 100 counts every KeyValue, AnyValue, ArrayValue and
	// KeyValueList message entered below an attribute, so that the n-th nested array sits at
	// recursion depth 2n and the n-th nested map at 3n-1. Arrays reach 49 levels, maps 33.
	pdataMaxNesting = 49
	// DefaultMaxNesting is pdata's own maximum: by default the decoder refuses no value
	// pdata accepts.
	DefaultMaxNesting = pdataMaxNesting
)

// Limits bounds what one Decode accepts. The zero value means the defaults.
type Limits struct {
	// MaxRequestBytes is the longest request accepted; a longer one is refused with
	// ErrTooLarge before any byte is read. 0 means DefaultMaxRequestBytes (64 MiB); at most
	// 2 GiB - 1 (offsets are kept as uint32). A Decoder keeps an index of at most ~90 bytes
	// per request byte, in the worst case of a request of empty spans (two bytes each, 88
	// bytes of index each, append's slack on top; TestIndexMemory), so this limit also bounds
	// its memory.
	MaxRequestBytes int `mapstructure:"max_request_bytes"`
	// MaxNesting is the deepest nesting of arrays and maps (kvlists) in one attribute value:
	// a string is 0, an array of strings 1, an array of maps of strings 2. A deeper value is
	// refused with ErrTooDeep. 0 means DefaultMaxNesting (49, pdata's own maximum); 1 to 49.
	// pdata's recursion limit applies on top of it whatever this says (a request it refuses
	// is refused), so values below 49 are the only ones that refuse more than pdata.
	MaxNesting int `mapstructure:"max_nesting"`
}

// Validate reports every out-of-range field, naming its key.
func (l Limits) Validate() error {
	var errs []error
	if l.MaxRequestBytes < 0 || l.MaxRequestBytes > hardMaxRequestBytes {
		errs = append(errs, fmt.Errorf("max_request_bytes must be between 0 (default) and %d, got %d",
			hardMaxRequestBytes, l.MaxRequestBytes))
	}
	if l.MaxNesting < 0 || l.MaxNesting > pdataMaxNesting {
		errs = append(errs, fmt.Errorf("max_nesting must be between 0 (default) and %d (pdata refuses deeper values anyway), got %d",
			pdataMaxNesting, l.MaxNesting))
	}
	return errors.Join(errs...)
}

// resolved returns the limits Decode applies: defaults for zeros, and out-of-range values
// clamped, so that a Decoder whose Limits were never validated still cannot index past a
// uint32 or recurse without bound.
func (l Limits) resolved() Limits {
	if l.MaxRequestBytes <= 0 {
		l.MaxRequestBytes = DefaultMaxRequestBytes
	}
	l.MaxRequestBytes = min(l.MaxRequestBytes, hardMaxRequestBytes)
	if l.MaxNesting <= 0 {
		l.MaxNesting = DefaultMaxNesting
	}
	l.MaxNesting = min(l.MaxNesting, pdataMaxNesting)
	return l
}
