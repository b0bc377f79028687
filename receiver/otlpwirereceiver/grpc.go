package otlpwirereceiver // import "github.com/otelcol-red/otelcol-red/receiver/otlpwirereceiver"

import (
	"context"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
)

// The OTLP trace service, served without pdata: the server's codec (wireCodec) hands the
// handler the request's bytes instead of an unmarshalled message, and writes the response.
//
// Buffer ownership: gRPC gives a codec the message as a mem.BufferSlice, the pooled buffers
// the HTTP/2 frames were read into (16 KiB each by default; after decompression, the
// buffers the decompressor wrote, pooled too), and frees them when Unmarshal returns. A
// request is therefore copied once, by Materialize, into a slice of its exact length that
// nothing else references, which then travels as the wire traces' buffer. pdata's own codec
// copies too (into a pooled buffer it unmarshals from and frees). Rejected: taking a
// reference on the frames' buffers (gRPC lets a codec Ref them) would avoid the copy only for
// a request of one frame, leave the pool's buffers to the garbage collector, and hand the
// decoder a non-contiguous request otherwise.

const (
	traceServiceName = "opentelemetry.proto.collector.trace.v1.TraceService"
	exportMethod     = "/" + traceServiceName + "/Export"
)

// rawRequest is an ExportTraceServiceRequest as the client sent it.
type rawRequest struct{ buf []byte }

// exportResponse is the ExportTraceServiceResponse the server answers with: always the one
// the otlp receiver answers, pdata's empty response (it never sets partial_success: a request
// is accepted or refused whole), encoded once by pdata, so that the bytes are the same.
type exportResponse struct{}

var exportResponseBytes = mustEncode(ptraceotlp.NewExportResponse().MarshalProto())

// wireCodec is the gRPC server's codec (forced for this server only, so no other server in
// the process is affected). Messages other than the two above, which this server never sees,
// go to the codec registered for "proto".
type wireCodec struct{ fallback encoding.CodecV2 }

func newWireCodec() wireCodec { return wireCodec{fallback: encoding.GetCodecV2("proto")} }

func (c wireCodec) Marshal(v any) (mem.BufferSlice, error) {
	if _, ok := v.(*exportResponse); ok {
		// gRPC only reads the buffer (SliceBuffer's Free does nothing), so every RPC
		// shares it.
		return mem.BufferSlice{mem.SliceBuffer(exportResponseBytes)}, nil
	}
	return c.fallback.Marshal(v)
}

func (c wireCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if req, ok := v.(*rawRequest); ok {
		req.buf = data.Materialize()
		return nil
	}
	return c.fallback.Unmarshal(data, v)
}

// Name is the codec's content subtype: clients send application/grpc or application/grpc+proto.
func (wireCodec) Name() string { return "proto" }

// traceServer is what traceServiceDesc serves; gRPC checks the registered value implements it.
type traceServer interface {
	export(ctx context.Context, req *rawRequest) (*exportResponse, error)
}

var traceServiceDesc = grpc.ServiceDesc{
	ServiceName: traceServiceName,
	HandlerType: (*traceServer)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Export", Handler: exportHandler}},
	Streams:     []grpc.StreamDesc{},
	Metadata:    "opentelemetry/proto/collector/trace/v1/trace_service.proto",
}

// exportHandler is what protoc-gen-go-grpc would generate for Export, with rawRequest for the
// request message; the interceptors configgrpc installs (client metadata, auth) run as usual.
func exportHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	req := new(rawRequest)
	if err := dec(req); err != nil {
		return nil, err
	}
	s := srv.(traceServer)
	if interceptor == nil {
		return s.export(ctx, req)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: exportMethod}
	return interceptor(ctx, req, info, func(ctx context.Context, req any) (any, error) {
		return s.export(ctx, req.(*rawRequest))
	})
}

// grpcTraces serves Export for the receiver.
type grpcTraces struct{ r *otlpWireReceiver }

func (g *grpcTraces) export(ctx context.Context, req *rawRequest) (*exportResponse, error) {
	if err := g.r.consumeWire(ctx, g.r.obsGRPC, transportGRPC, req.buf); err != nil {
		return nil, err
	}
	return &exportResponse{}, nil
}
