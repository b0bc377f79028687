package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/intake"
	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces"
)

// wireStage is a test stage whose ReduceWire counts the decoder's spans apart from Reduce's,
// so that a test sees which path a request took.
type wireStage struct {
	*testStage
	wireSpans, pdataSpans int
	refusals              Refusals
	lastDecoder           *otlpwire.Decoder // the decoder ReduceWire was given last
}

func newWireStage(t *testing.T, withReduceWire bool) *wireStage {
	ws := &wireStage{testStage: &testStage{c: &counting{active: &interval{}, wake: 4}, clock: clockwork.NewFakeClock()}}
	set := Settings[testBatch, *interval]{
		Pipe: intake.NewPipe(16, 0, testBatches),
		Reduce: func(b *testBatch, td ptrace.Traces) {
			b.spans += td.SpanCount()
			ws.pdataSpans += td.SpanCount()
		},
		Consumer:        ws.c,
		Flusher:         ws.c,
		Spare:           &interval{},
		Clock:           ws.clock,
		FlushInterval:   time.Minute,
		ErrShutdown:     errTestShutdown,
		Refused:         &ws.refused,
		RefusedRequests: &ws.refusals,
		Postponed:       &ws.postponed,
		Closed:          func() {},
	}
	if withReduceWire {
		set.ReduceWire = func(b *testBatch, d *otlpwire.Decoder) {
			b.spans += d.NumSpans()
			ws.wireSpans += d.NumSpans()
			ws.lastDecoder = d
		}
	}
	ws.Stage = New(set)
	t.Cleanup(func() { _ = ws.Shutdown(context.Background()) })
	return ws
}

// request returns the bytes of a request of n spans under one service.
func request(t testing.TB, n int) []byte {
	td := spans(n)
	td.ResourceSpans().At(0).Resource().Attributes().PutStr("service.name", "svc")
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	return b
}

// Wire traces in Wrap's form are reduced from the decoder; merged carriers, and every form
// when the stage has no ReduceWire, are materialised and reduced as pdata; the spans are
// counted once either way.
func TestWireTracesTakeTheWirePath(t *testing.T) {
	ctx := context.Background()
	s := newWireStage(t, true)
	require.NoError(t, s.Start(ctx, nil))
	require.NoError(t, s.ConsumeTraces(ctx, wiretraces.Wrap(request(t, 3))))
	require.NoError(t, s.ConsumeTraces(ctx, wiretraces.WrapTracesData(request(t, 4))))
	require.Equal(t, 7, s.wireSpans)
	require.Zero(t, s.pdataSpans)

	merged := wiretraces.Wrap(request(t, 2))
	wiretraces.Wrap(request(t, 5)).ResourceSpans().MoveAndAppendTo(merged.ResourceSpans())
	require.NoError(t, s.ConsumeTraces(ctx, merged))
	require.NoError(t, s.ConsumeTraces(ctx, spans(6)))
	require.Equal(t, 7, s.wireSpans)
	require.Equal(t, 13, s.pdataSpans)
	require.NoError(t, s.Shutdown(ctx))
	require.Equal(t, 20, s.c.total())

	p := newWireStage(t, false)
	require.NoError(t, p.ConsumeTraces(ctx, wiretraces.Wrap(request(t, 3))))
	require.Zero(t, p.wireSpans)
	require.Equal(t, 3, p.pdataSpans)
}

// A request the receiver decoded and handed over in the context (wiretraces.Decoded) is reduced
// from the receiver's decoder, not decoded again, and the borrow is given back; any other
// request, the same bytes elsewhere included, is decoded by the stage.
func TestReceiverDecodingIsBorrowed(t *testing.T) {
	s := newWireStage(t, true)
	req := request(t, 4)
	d := &otlpwire.Decoder{MigrateDeprecatedScopeSpans: true}
	require.NoError(t, d.Decode(req))
	h := wiretraces.NewDecoded(d, req)
	ctx := wiretraces.WithDecoded(context.Background(), h)

	require.NoError(t, s.ConsumeTraces(ctx, wiretraces.Wrap(req)))
	require.Same(t, d, s.lastDecoder)
	require.NoError(t, s.ConsumeTraces(ctx, wiretraces.Wrap(append([]byte(nil), req...))))
	require.NotSame(t, d, s.lastDecoder)
	require.Equal(t, 8, s.wireSpans)
	require.True(t, h.Close(), "the stage gave the borrow back")
}

// A carried request the decoder refuses is a permanent error counted by reason, and nothing
// of it is counted; so is one that pdata refuses on the materialising path.
func TestRefusedWireTraces(t *testing.T) {
	ctx := context.Background()
	s := newWireStage(t, true)
	req := request(t, 3)
	err := s.ConsumeTraces(ctx, wiretraces.Wrap(req[:len(req)-1]))
	require.Error(t, err)
	require.True(t, consumererror.IsPermanent(err))
	require.ErrorIs(t, err, otlpwire.ErrMalformed)

	merged := wiretraces.Wrap(req[:len(req)-1])
	wiretraces.Wrap(req).ResourceSpans().MoveAndAppendTo(merged.ResourceSpans())
	err = s.ConsumeTraces(ctx, merged)
	require.True(t, consumererror.IsPermanent(err))

	require.EqualValues(t, 2, s.refusals[otlpwire.RefusedMalformed].Load())
	require.Zero(t, s.refusals[otlpwire.RefusedTooLarge].Load()+s.refusals[otlpwire.RefusedTooDeep].Load())
	require.Zero(t, s.wireSpans+s.pdataSpans)
	require.Zero(t, s.refused.Load(), "refused requests have no span count")

	var r Refusals
	r.count(otlpwire.ErrTooLarge)
	r.count(&otlpwire.DecodeError{Kind: otlpwire.ErrTooDeep})
	require.EqualValues(t, 1, r[otlpwire.RefusedTooLarge].Load())
	require.EqualValues(t, 1, r[otlpwire.RefusedTooDeep].Load())
}

// A stage shut down refuses wire traces with the decoder's span count, and gives the decoder
// back without its request.
func TestShutDownStageRefusesWireTraces(t *testing.T) {
	ctx := context.Background()
	s := newWireStage(t, true)
	require.NoError(t, s.Shutdown(ctx))
	require.ErrorIs(t, s.ConsumeTraces(ctx, wiretraces.Wrap(request(t, 9))), errTestShutdown)
	require.EqualValues(t, 9, s.refused.Load())
	d := s.decoders.Get().(*otlpwire.Decoder)
	require.Zero(t, d.NumResources(), "a pooled decoder holds no request")
}

// Decoding wire traces allocates nothing once the stage's decoder pool is warm: the decoder
// keeps its tables from request to request. (The rest of ConsumeTraces is the pdata path's,
// whose allocations the connectors' tests measure end to end.)
func TestWireDecodeAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	s := newWireStage(t, true)
	td := wiretraces.Wrap(request(t, 50))
	consume := func() {
		d, h, _, err := s.decode(context.Background(), td)
		if err != nil || d.NumSpans() != 50 {
			panic("BUG: test request not decoded")
		}
		s.release(d, h)
	}
	for range 10 {
		consume()
	}
	require.Zero(t, testing.AllocsPerRun(200, consume))
}
