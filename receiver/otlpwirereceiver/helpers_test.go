package otlpwirereceiver

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/collector/pdata/testdata"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"

	"github.com/otelcol-red/otelcol-red/internal/freeport"
	"github.com/otelcol-red/otelcol-red/receiver/otlpwirereceiver/internal/metadata"
)

// genTraces returns traces of resources resources with spans spans each, every resource
// named after its index.
func genTraces(resources, spans int) ptrace.Traces {
	td := ptrace.NewTraces()
	for i := range resources {
		part := testdata.GenerateTraces(spans)
		part.ResourceSpans().At(0).Resource().Attributes().PutStr("service.name", "svc-"+strconv.Itoa(i))
		part.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	}
	return td
}

func marshal(t testing.TB, td ptrace.Traces) []byte {
	b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	require.NoError(t, err)
	return b
}

// endpoints is where a receiver under test listens.
type endpoints struct {
	grpc string // host:port
	http string // the traces URL
}

// newConfig returns the default config on free loopback ports.
func newConfig(t testing.TB) (*Config, endpoints) {
	addrs, err := freeport.Addrs(2)
	require.NoError(t, err)
	cfg := createDefaultConfig().(*Config)
	cfg.Protocols.GRPC.GetOrInsertDefault().NetAddr.Endpoint = addrs[0]
	cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = addrs[1]
	return cfg, endpoints{grpc: addrs[0], http: "http://" + addrs[1] + "/v1/traces"}
}

// started is a receiver under test with its telemetry.
type started struct {
	endpoints
	tel *componenttest.Telemetry
}

// startReceiver starts the otlpwire receiver with cfg (newConfig's, modified or not) in front
// of next; t's cleanup shuts it down.
func startReceiver(t testing.TB, cfg *Config, ep endpoints, next consumer.Traces) started {
	tel := componenttest.NewTelemetry()
	set := receivertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	r, err := NewFactory().CreateTraces(context.Background(), set, cfg, next)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() {
		require.NoError(t, r.Shutdown(context.Background()))
		require.NoError(t, tel.Shutdown(context.Background()))
	})
	return started{endpoints: ep, tel: tel}
}

// startStock starts the otlp receiver on the same kind of config, for side-by-side checks.
func startStock(t testing.TB, next consumer.Traces) started {
	addrs, err := freeport.Addrs(2)
	require.NoError(t, err)
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	cfg.Protocols.GRPC.GetOrInsertDefault().NetAddr.Endpoint = addrs[0]
	cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = addrs[1]
	tel := componenttest.NewTelemetry()
	set := receivertest.NewNopSettings(component.MustNewType("otlp"))
	set.TelemetrySettings = tel.NewTelemetrySettings()
	var r receiver.Traces
	r, err = f.CreateTraces(context.Background(), set, cfg, next)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() {
		require.NoError(t, r.Shutdown(context.Background()))
		require.NoError(t, tel.Shutdown(context.Background()))
	})
	return started{endpoints: endpoints{grpc: addrs[0], http: "http://" + addrs[1] + "/v1/traces"}, tel: tel}
}

func dial(t testing.TB, addr string) *grpc.ClientConn {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// rawCodec is a client codec that sends a request's bytes as they are and keeps the
// response's: it puts bytes no pdata client would write on the wire, shows the bytes a server
// answers, and keeps the client's cost out of the benchmarks.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(*rawRequest).buf)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	v.(*rawRequest).buf = data.Materialize()
	return nil
}
func (rawCodec) Name() string { return "proto" }

// exportRaw sends buf as an ExportTraceServiceRequest.
func exportRaw(ctx context.Context, conn *grpc.ClientConn, buf []byte, opts ...grpc.CallOption) error {
	_, err := exportRawResponse(ctx, conn, buf, opts...)
	return err
}

// exportRawResponse sends buf as an ExportTraceServiceRequest and returns the response's bytes.
func exportRawResponse(ctx context.Context, conn *grpc.ClientConn, buf []byte, opts ...grpc.CallOption) ([]byte, error) {
	opts = append(opts, grpc.ForceCodecV2(rawCodec{}))
	var resp rawRequest
	err := conn.Invoke(ctx, exportMethod, &rawRequest{buf: buf}, &resp, opts...)
	return resp.buf, err
}

// post sends body to url with contentType, gzipped when gz is set, and returns the answer.
func post(t testing.TB, url, contentType string, body []byte, gz bool) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader = bytes.NewReader(body)
	if gz {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		_, err := w.Write(body)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		rd = &b
	}
	req, err := http.NewRequest(http.MethodPost, url, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, got
}

// sumOf returns the value of counter name for the data point whose attributes include attrs
// (key, value pairs), or 0 when there is none.
func sumOf(t testing.TB, tel *componenttest.Telemetry, name string, attrs ...string) int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	if err != nil {
		return 0
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is not an int64 sum", name)
	var total int64
points:
	for _, dp := range sum.DataPoints {
		for i := 0; i+1 < len(attrs); i += 2 {
			if v, ok := dp.Attributes.Value(attribute.Key(attrs[i])); !ok || v.AsString() != attrs[i+1] {
				continue points
			}
		}
		total += dp.Value
	}
	return total
}

// gatedSink is a consumer that holds every call until released, to catch a shutdown that
// does not wait for the requests in flight.
type gatedSink struct {
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	got     []ptrace.Traces
}

func newGatedSink() *gatedSink {
	return &gatedSink{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (s *gatedSink) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (s *gatedSink) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	s.entered <- struct{}{}
	<-s.release
	s.mu.Lock()
	s.got = append(s.got, td)
	s.mu.Unlock()
	return nil
}

func (s *gatedSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

// errSink refuses every call with err.
type errSink struct{ err error }

func (errSink) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (s errSink) ConsumeTraces(context.Context, ptrace.Traces) error { return s.err }

var errRefused = errors.New("data refused due to high memory usage")
