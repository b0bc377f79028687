package harness

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Sink is where a Generator sends pool requests: one collector's OTLP receiver, or a Kafka topic
// that both collectors consume.
type Sink interface {
	// Send delivers pool request i and returns once the receiving side acknowledged it. An error
	// means the request was not taken and may be sent again without counting it twice.
	Send(ctx context.Context, i int) error
	Close() error
}

// traceExportMethod is the OTLP gRPC method every OTLP trace receiver serves.
const traceExportMethod = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

// maxRequestBytes lifts gRPC's 4 MiB default, which a large pool request may exceed.
const maxRequestBytes = 64 << 20

// OTLPSink sends the pool's pre-encoded requests to an OTLP gRPC receiver, uncompressed: the
// collectors run on the same host, and compression would only add the same cost to both.
type OTLPSink struct {
	pool *Pool
	conn *grpc.ClientConn
}

// NewOTLPSink connects (lazily, as gRPC does) to the receiver at endpoint (host:port).
func NewOTLPSink(pool *Pool, endpoint string) (*OTLPSink, error) {
	conn, err := grpc.NewClient(endpoint,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(
			grpc.ForceCodec(rawCodec{}),
			grpc.MaxCallSendMsgSize(maxRequestBytes),
		))
	if err != nil {
		return nil, fmt.Errorf("cannot create OTLP client for endpoint=%q: %w", endpoint, err)
	}
	return &OTLPSink{pool: pool, conn: conn}, nil
}

// Send implements Sink. A partial success that rejects spans is an error: the receiver did not
// take them, and the run must not count them as sent.
func (s *OTLPSink) Send(ctx context.Context, i int) error {
	var resp []byte
	if err := s.conn.Invoke(ctx, traceExportMethod, s.pool.Encoded[i], &resp); err != nil {
		return err
	}
	if len(resp) == 0 {
		return nil
	}
	r := ptraceotlp.NewExportResponse()
	if err := r.UnmarshalProto(resp); err != nil {
		return fmt.Errorf("cannot parse export response: %w", err)
	}
	if n := r.PartialSuccess().RejectedSpans(); n != 0 {
		return fmt.Errorf("receiver rejected %d spans: %s", n, r.PartialSuccess().ErrorMessage())
	}
	return nil
}

// Close implements Sink.
func (s *OTLPSink) Close() error { return s.conn.Close() }

// rawCodec passes already-encoded protobuf bytes through gRPC. It names itself "proto" so that the
// receiver sees an ordinary application/grpc+proto request.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("BUG: raw codec cannot marshal %T", v)
	}
	return b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	p, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("BUG: raw codec cannot unmarshal into %T", v)
	}
	// gRPC may reuse data after Unmarshal returns.
	*p = append((*p)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }
