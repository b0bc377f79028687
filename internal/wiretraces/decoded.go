package wiretraces // import "github.com/otelcol-red/otelcol-red/internal/wiretraces"

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
)

// Decoded hands the decoding of a request from the receiver that validated it to the
// components it calls, so that the request is decoded once, not once to validate it and again
// to read it. The receiver decodes the request into a decoder, wraps the bytes (Wrap) and
// calls the next consumer with a context that carries both (WithDecoded); a component that
// would decode the same bytes borrows the decoder instead (Borrow), and gives it back before it
// returns (Return). When the call returns the receiver closes the hand-off (Close): from then
// on nothing may borrow it, and the receiver reuses the decoder only if nothing still holds it.
//
// Consumers run within the receiver's call in a collector pipeline (processors and connectors
// are synchronous unless they queue, and a queue keeps the traces, not the context), so in
// practice every borrow ends before Close. The count makes it safe otherwise: a borrow after
// Close fails and the borrower decodes the bytes itself, and a decoder still borrowed at Close
// is left to the garbage collector rather than reused under its reader.
type Decoded struct {
	d   *otlpwire.Decoder
	buf []byte
	// state counts the borrows in progress; closedBit is set by Close.
	state atomic.Int64
}

const closedBit = 1 << 62

// NewDecoded returns a hand-off of d, which has decoded buf without error; buf is the slice
// given to Wrap.
func NewDecoded(d *otlpwire.Decoder, buf []byte) *Decoded {
	return &Decoded{d: d, buf: buf}
}

// Reset makes h a hand-off of d and buf again, open, for a receiver that pools hand-offs with
// their decoders; h must have been closed with nothing borrowed (Close returned true).
func (h *Decoded) Reset(d *otlpwire.Decoder, buf []byte) {
	h.d, h.buf = d, buf
	h.state.Store(0)
}

// Decoder returns the hand-off's decoder, for its owner.
func (h *Decoded) Decoder() *otlpwire.Decoder { return h.d }

// Borrow returns the decoder when the hand-off is open and its decoding is the one Decode would
// make of td: td is wire traces in Wrap's form carrying the very slice that was decoded (the same
// first byte and length), read the same way (the deprecated scope spans migrated or not). The
// caller must Return it. Otherwise nil: the caller decodes td itself.
func (h *Decoded) Borrow(td ptrace.Traces) *otlpwire.Decoder {
	buf, r, ok := pure(td)
	if !ok || len(buf) == 0 || len(buf) != len(h.buf) || &buf[0] != &h.buf[0] ||
		h.d.MigrateDeprecatedScopeSpans != (r == asExportRequest) {
		return nil
	}
	for {
		s := h.state.Load()
		if s&closedBit != 0 {
			return nil
		}
		if h.state.CompareAndSwap(s, s+1) {
			return h.d
		}
	}
}

// Return ends a borrow.
func (h *Decoded) Return() { h.state.Add(-1) }

// Close ends the hand-off and reports whether nothing holds the decoder, which its owner may
// then reuse; when it returns false the owner must drop it.
func (h *Decoded) Close() bool {
	return h.state.Or(closedBit)&^closedBit == 0
}

type decodedKey struct{}

// WithDecoded returns ctx carrying h.
func WithDecoded(ctx context.Context, h *Decoded) context.Context {
	return context.WithValue(ctx, decodedKey{}, h)
}

// DecodedFrom returns the hand-off ctx carries, nil without one.
func DecodedFrom(ctx context.Context) *Decoded {
	h, _ := ctx.Value(decodedKey{}).(*Decoded)
	return h
}
