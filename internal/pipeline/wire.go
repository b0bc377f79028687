package pipeline // import "github.com/otelcol-red/otelcol-red/internal/pipeline"

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces"
)

// Wire traces (package wiretraces) carry a request's bytes instead of its pdata. The stage
// recognises them before it takes a batch: the form the receivers of this repository make
// (wiretraces.Decode) is decoded into a pooled otlpwire.Decoder and reduced from it
// (Settings.ReduceWire), without pdata; any other form that holds carriers (wire traces a
// batch processor merged, or the Kafka receiver's header extraction changed) is turned into the
// pdata a stock receiver would have made (wiretraces.Materialize) and reduced as pdata. Traces
// without carriers are pdata as they are. A stage without ReduceWire materialises every form.
//
// A carried request the decoder refuses is refused whole: a permanent error (retrying the same
// bytes cannot succeed), counted by reason in Settings.RefusedRequests, and nothing of it is
// counted. The receivers of this repository validate what they wrap with the same decoder,
// so only traces wrapped without validation, or under laxer limits, get there.

// Refusals counts refused requests by reason (otlpwire.Refusal), as the otlpwire receiver
// names them.
type Refusals [otlpwire.Refusals]atomic.Int64

// Callback reports the refusals, one point per reason from 0, when the collector's own metrics
// are read: a connector registers it for its refused_requests counter.
func (r *Refusals) Callback() metric.Int64Callback {
	var sets [otlpwire.Refusals]metric.ObserveOption
	for i, name := range otlpwire.RefusalNames {
		sets[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", name)))
	}
	return func(_ context.Context, o metric.Int64Observer) error {
		for i, set := range sets {
			o.Observe(r[i].Load(), set)
		}
		return nil
	}
}

// count adds one refusal of err.
func (r *Refusals) count(err error) { r[otlpwire.RefusalOf(err)].Add(1) }

// wireLimits are the connectors' decoding limits: what a receiver of this repository accepted
// under its own limits must not be refused here, so the request size is bounded only by what
// the decoder can index (2 GiB - 1), and the nesting by pdata's own maximum, the default. The
// receivers' limits (max_request_bytes, max_nesting, and the transports' sizes before them)
// are where a collector bounds requests.
var wireLimits = otlpwire.Limits{MaxRequestBytes: math.MaxInt32}

func newDecoder() any { return &otlpwire.Decoder{Limits: wireLimits} }

// decode returns td's decoder, holding its request, when td is wire traces; else nil and td
// as pdata (materialised when it holds carriers in another form). The decoder is the one the
// receiver decoded the request with when ctx hands it over (wiretraces.Decoded; h is then that
// hand-off, to give back), else one of the stage's. A refused request is counted and returned as
// a permanent error.
func (s *Stage[B, F]) decode(ctx context.Context, td ptrace.Traces) (*otlpwire.Decoder, *wiretraces.Decoded, ptrace.Traces, error) {
	var err error
	if _, ok := wiretraces.Unwrap(td); ok && s.set.ReduceWire != nil {
		if h := wiretraces.DecodedFrom(ctx); h != nil {
			if d := h.Borrow(td); d != nil {
				return d, h, td, nil
			}
		}
		d := s.decoders.Get().(*otlpwire.Decoder)
		if _, err = wiretraces.Decode(d, td); err == nil {
			return d, nil, td, nil
		}
		s.release(d, nil)
	} else if td, err = wiretraces.Materialize(td); err == nil {
		return nil, nil, td, nil
	}
	s.set.RefusedRequests.count(err)
	return nil, nil, ptrace.Traces{}, consumererror.NewPermanent(fmt.Errorf("refused wire traces: %w", err))
}

// release gives d back: to the receiver's hand-off h it was borrowed from, or else to the pool,
// holding nothing of its request (a pooled decoder must not keep a request, for the Kafka
// receiver a whole fetch response, alive). A nil d (pdata) is nothing to give back.
func (s *Stage[B, F]) release(d *otlpwire.Decoder, h *wiretraces.Decoded) {
	if d == nil {
		return
	}
	if h != nil {
		h.Return()
		return
	}
	_ = d.Decode(nil)
	s.decoders.Put(d)
}

// spans is the span count of a request: the decoder's for wire traces (d not nil), pdata's
// otherwise.
func (s *Stage[B, F]) spans(d *otlpwire.Decoder, td ptrace.Traces) int64 {
	if d != nil {
		return int64(d.NumSpans())
	}
	return int64(td.SpanCount())
}
