package otlpwirereceiver // import "github.com/otelcol-red/otelcol-red/receiver/otlpwirereceiver"

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces"
)

// dataFormatProtobuf is the format the otlp receiver reports to its ObsReport for every
// request, JSON ones included; the same here, so that the receive spans read alike.
const dataFormatProtobuf = "protobuf"

// otlpWireReceiver serves the OTLP trace service over gRPC and HTTP. Its servers, their
// lifecycle and the statuses it answers are the otlp receiver's; what differs is the data
// path of protobuf requests: consumeWire.
type otlpWireReceiver struct {
	cfg  *Config
	set  receiver.Settings
	next consumer.Traces

	obsGRPC   *receiverhelper.ObsReport
	obsHTTP   *receiverhelper.ObsReport
	telemetry *telemetry

	// decoders holds otlpwire.Decoders set to cfg's limits, each in the hand-off that passes
	// its decoding downstream (wiretraces.Decoded): a decoder keeps the tables it grew, so
	// after the first requests validation allocates nothing, and concurrent requests each
	// take their own.
	decoders sync.Pool

	serverGRPC *grpc.Server
	serverHTTP *http.Server
	shutdownWG sync.WaitGroup
}

func newReceiver(cfg *Config, set receiver.Settings, next consumer.Traces) (*otlpWireReceiver, error) {
	obsGRPC, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID:             set.ID,
		Transport:              "grpc",
		ReceiverCreateSettings: set,
	})
	if err != nil {
		return nil, err
	}
	obsHTTP, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID:             set.ID,
		Transport:              "http",
		ReceiverCreateSettings: set,
	})
	if err != nil {
		return nil, err
	}
	tel, err := newTelemetry(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	r := &otlpWireReceiver{
		cfg:       cfg,
		set:       set,
		next:      next,
		obsGRPC:   obsGRPC,
		obsHTTP:   obsHTTP,
		telemetry: tel,
	}
	limits := cfg.limits()
	r.decoders.New = func() any {
		// The OTLP receivers read the deprecated instrumentation_library_spans in place of
		// an absent scope_spans; the decoder must count the spans they would.
		return wiretraces.NewDecoded(&otlpwire.Decoder{Limits: limits, MigrateDeprecatedScopeSpans: true}, nil)
	}
	return r, nil
}

// Start runs the gRPC and HTTP servers of the configured protocols, as the otlp receiver does.
func (r *otlpWireReceiver) Start(ctx context.Context, host component.Host) error {
	if err := r.startGRPC(ctx, host); err != nil {
		return err
	}
	if err := r.startHTTP(ctx, host); err != nil {
		// The gRPC server may run already: stop it, or its goroutine leaks.
		return errors.Join(err, r.Shutdown(ctx))
	}
	return nil
}

func (r *otlpWireReceiver) startGRPC(ctx context.Context, host component.Host) error {
	if !r.cfg.Protocols.GRPC.HasValue() {
		return nil
	}
	grpcCfg := r.cfg.Protocols.GRPC.Get()
	var err error
	// The codec is what keeps the request's bytes: grpc.go.
	r.serverGRPC, err = grpcCfg.ToServer(ctx, host.GetExtensions(), r.set.TelemetrySettings,
		configgrpc.WithGrpcServerOption(grpc.ForceServerCodecV2(newWireCodec())))
	if err != nil {
		return err
	}
	r.serverGRPC.RegisterService(&traceServiceDesc, &grpcTraces{r: r})

	ln, err := grpcCfg.NetAddr.Listen(ctx)
	if err != nil {
		return err
	}
	r.set.Logger.Info("Starting GRPC server", zap.String("endpoint", ln.Addr().String()))
	r.shutdownWG.Go(func() {
		if err := r.serverGRPC.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(err))
		}
	})
	return nil
}

func (r *otlpWireReceiver) startHTTP(ctx context.Context, host component.Host) error {
	if !r.cfg.Protocols.HTTP.HasValue() {
		return nil
	}
	httpCfg := r.cfg.Protocols.HTTP.Get()
	mux := http.NewServeMux()
	mux.Handle(string(httpCfg.TracesURLPath), newHTTPTraces(r, httpCfg.ServerConfig.MaxRequestBodySize))
	var err error
	r.serverHTTP, err = httpCfg.ServerConfig.ToServer(ctx, host.GetExtensions(), r.set.TelemetrySettings, mux,
		confighttp.WithErrorHandler(errorHandler))
	if err != nil {
		return err
	}
	var ln net.Listener
	if ln, err = httpCfg.ServerConfig.ToListener(ctx); err != nil {
		return err
	}
	r.set.Logger.Info("Starting HTTP server", zap.String("endpoint", ln.Addr().String()))
	r.shutdownWG.Go(func() {
		if err := r.serverHTTP.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(err))
		}
	})
	return nil
}

// Shutdown stops accepting and waits for the requests in flight, as the otlp receiver does:
// the HTTP server's Shutdown waits for its handlers (until ctx ends), the gRPC server's
// GracefulStop for its RPCs; each request in flight finishes its ConsumeTraces and gets its
// answer.
func (r *otlpWireReceiver) Shutdown(ctx context.Context) error {
	var err error
	if r.serverHTTP != nil {
		err = r.serverHTTP.Shutdown(ctx)
	}
	if r.serverGRPC != nil {
		r.serverGRPC.GracefulStop()
	}
	r.shutdownWG.Wait()
	r.telemetry.shutdown()
	return err
}

// consumeWire is the data path of a protobuf request, gRPC or HTTP. req is the request's own
// buffer: the transport never reuses it (grpc.go and http.go say why), so it becomes the wire
// traces' buffer as it is. The result is nil or a gRPC status error, the answer the client
// gets (HTTP maps it to its status code).
func (r *otlpWireReceiver) consumeWire(ctx context.Context, obs *receiverhelper.ObsReport, tr transport, req []byte) error {
	// Validate first: pdata's unmarshaler would refuse what the decoder refuses, so what
	// goes downstream is what the otlp receiver would have let through, and its span count
	// is the one the otlp receiver reports.
	h := r.decoders.Get().(*wiretraces.Decoded)
	d := h.Decoder()
	err := d.Decode(req)
	spans := d.NumSpans()
	if err != nil || spans == 0 {
		r.release(h)
		if err != nil {
			r.telemetry.recordRefused(ctx, tr, err)
			return status.Error(codes.InvalidArgument, err.Error())
		}
		// As the otlp receiver: a request without spans is acknowledged, not sent on.
		return nil
	}
	// The consumers that read wire traces borrow this decoding instead of decoding req again
	// (wiretraces.Decoded): the connectors of this repository do, within this call.
	h.Reset(d, req)
	ctx = obs.StartTracesOp(ctx)
	err = r.next.ConsumeTraces(wiretraces.WithDecoded(ctx, h), wiretraces.Wrap(req))
	if h.Close() {
		r.release(h)
	} // else a consumer still holds the decoder: it is left to the garbage collector
	obs.EndTracesOp(ctx, dataFormatProtobuf, spans, err)
	if err != nil {
		return statusFromConsumerError(err)
	}
	return nil
}

// release gives h's decoder back to the pool holding nothing of its request: a pooled decoder
// must not keep a request's buffer alive.
func (r *otlpWireReceiver) release(h *wiretraces.Decoded) {
	_ = h.Decoder().Decode(nil)
	h.Reset(h.Decoder(), nil)
	r.decoders.Put(h)
}

// consumeJSON is the data path of a JSON request (HTTP only): pdata's JSON decoding, and the
// traces go on as ordinary pdata, exactly as the otlp receiver sends them.
func (r *otlpWireReceiver) consumeJSON(ctx context.Context, body []byte) error {
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalJSON(body); err != nil {
		r.telemetry.recordRefused(ctx, transportHTTP, err)
		return status.Error(codes.InvalidArgument, err.Error())
	}
	td := req.Traces()
	return r.consumePdata(ctx, td)
}

func (r *otlpWireReceiver) consumePdata(ctx context.Context, td ptrace.Traces) error {
	spans := td.SpanCount()
	if spans == 0 {
		return nil
	}
	ctx = r.obsHTTP.StartTracesOp(ctx)
	err := r.next.ConsumeTraces(ctx, td)
	r.obsHTTP.EndTracesOp(ctx, dataFormatProtobuf, spans, err)
	if err != nil {
		return statusFromConsumerError(err)
	}
	return nil
}

// statusFromConsumerError is the otlp receiver's mapping of a downstream error to the status
// the client gets: a status error is kept; otherwise a permanent error is Internal (not
// retryable; HTTP 500) and any other, such as the memory limiter's refusal, Unavailable
// (retryable; HTTP 503), so that back-pressure reaches the sender as a retry.
func statusFromConsumerError(err error) error {
	if s, ok := status.FromError(err); ok {
		return s.Err()
	}
	code := codes.Unavailable
	if consumererror.IsPermanent(err) {
		code = codes.Internal
	}
	return status.New(code, err.Error()).Err()
}
