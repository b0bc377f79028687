package harness

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
)

// traceServer is an OTLP receiver stand-in that counts spans and can reject some.
type traceServer struct {
	ptraceotlp.UnimplementedGRPCServer
	spans  atomic.Int64
	reject int64
}

func (s *traceServer) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	s.spans.Add(int64(req.Traces().SpanCount()))
	resp := ptraceotlp.NewExportResponse()
	if s.reject > 0 {
		resp.PartialSuccess().SetRejectedSpans(s.reject)
		resp.PartialSuccess().SetErrorMessage("too many")
	}
	return resp, nil
}

func startTraceServer(t *testing.T, srv *traceServer) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := grpc.NewServer()
	ptraceotlp.RegisterGRPCServer(gs, srv)
	go func() { _ = gs.Serve(l) }()
	t.Cleanup(gs.Stop)
	return l.Addr().String()
}

func TestOTLPSinkSendsPreEncodedRequests(t *testing.T) {
	pool := smallPool(t)
	srv := &traceServer{}
	sink, err := NewOTLPSink(pool, startTraceServer(t, srv))
	require.NoError(t, err)
	defer sink.Close()
	for i := range pool.Encoded {
		require.NoError(t, sink.Send(context.Background(), i))
	}
	assert.Equal(t, int64(len(pool.Encoded)*pool.SpansPerRequest), srv.spans.Load())
}

func TestOTLPSinkTreatsPartialSuccessAsFailure(t *testing.T) {
	pool := smallPool(t)
	sink, err := NewOTLPSink(pool, startTraceServer(t, &traceServer{reject: 2}))
	require.NoError(t, err)
	defer sink.Close()
	require.ErrorContains(t, sink.Send(context.Background(), 0), "rejected 2 spans")
}
