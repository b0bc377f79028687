package otlpwirereceiver

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/otelcol-red/otelcol-red/internal/wiretraces"
)

// borrowingSink borrows the receiver's decoding of each request, as the connectors do, and
// records the span count it reads from it (-1 when there is none to borrow).
type borrowingSink struct {
	mu    sync.Mutex
	spans []int
}

func (*borrowingSink) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (s *borrowingSink) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	n := -1
	if h := wiretraces.DecodedFrom(ctx); h != nil {
		if d := h.Borrow(td); d != nil {
			n = d.NumSpans()
			h.Return()
		}
	}
	s.mu.Lock()
	s.spans = append(s.spans, n)
	s.mu.Unlock()
	return nil
}

// The receiver hands its decoding of a protobuf request to the consumers it calls, over gRPC
// and HTTP, so that they need not decode the request again.
func TestDecodingHandedDownstream(t *testing.T) {
	cfg, ep := newConfig(t)
	sink := new(borrowingSink)
	startReceiver(t, cfg, ep, sink)
	client := ptraceotlp.NewGRPCClient(dial(t, ep.grpc))
	for _, td := range []ptrace.Traces{genTraces(3, 20), genTraces(1, 7)} {
		_, err := client.Export(context.Background(), ptraceotlp.NewExportRequestFromTraces(td))
		require.NoError(t, err)
	}
	code, _, body := post(t, ep.http, "application/x-protobuf", marshal(t, genTraces(2, 5)), false)
	require.Equal(t, http.StatusOK, code, string(body))
	sink.mu.Lock()
	defer sink.mu.Unlock()
	assert.Equal(t, []int{60, 7, 10}, sink.spans)
}
