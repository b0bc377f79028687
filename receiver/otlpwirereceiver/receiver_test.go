package otlpwirereceiver

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcgzip "google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/otelcol-red/otelcol-red/internal/wiretraces"
	"github.com/otelcol-red/otelcol-red/receiver/otlpwirereceiver/internal/metadata"
)

// checkWire asserts that got is wire traces carrying exactly the encoding of want, and that
// they materialise into want.
func checkWire(t *testing.T, want, got ptrace.Traces) {
	t.Helper()
	buf, ok := wiretraces.Unwrap(got)
	require.True(t, ok, "a protobuf request must go downstream as wire traces")
	assert.Equal(t, marshal(t, want), buf)
	m, err := wiretraces.Materialize(got)
	require.NoError(t, err)
	assert.Equal(t, want, m)
}

func accepted(t *testing.T, s started, transport string) int64 {
	return sumOf(t, s.tel, "otelcol_receiver_accepted_spans", "transport", transport)
}

func refusedSpans(t *testing.T, s started, transport string) int64 {
	return sumOf(t, s.tel, "otelcol_receiver_refused_spans", "transport", transport)
}

func refusedRequests(t *testing.T, s started, transport, reason string) int64 {
	return sumOf(t, s.tel, "otelcol_receiver_otlpwire_refused_requests", "transport", transport, "reason", reason)
}

func TestGRPCExport(t *testing.T) {
	for _, compressed := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", compressed), func(t *testing.T) {
			cfg, ep := newConfig(t)
			sink := new(consumertest.TracesSink)
			s := startReceiver(t, cfg, ep, sink)
			client := ptraceotlp.NewGRPCClient(dial(t, ep.grpc))
			var opts []grpc.CallOption
			if compressed {
				opts = append(opts, grpc.UseCompressor(grpcgzip.Name))
			}
			sent := []ptrace.Traces{genTraces(3, 20), genTraces(1, 7)}
			for _, td := range sent {
				resp, err := client.Export(context.Background(), ptraceotlp.NewExportRequestFromTraces(td), opts...)
				require.NoError(t, err)
				assert.Equal(t, ptraceotlp.NewExportResponse(), resp, "the empty response, no partial success")
			}
			require.Len(t, sink.AllTraces(), len(sent))
			for i, td := range sent {
				checkWire(t, td, sink.AllTraces()[i])
			}
			assert.Equal(t, int64(67), accepted(t, s, "grpc"))
			assert.Zero(t, refusedSpans(t, s, "grpc"))
			assert.Zero(t, sumOf(t, s.tel, "otelcol_receiver_otlpwire_refused_requests"))
		})
	}
}

func TestHTTPProtobuf(t *testing.T) {
	for _, compressed := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", compressed), func(t *testing.T) {
			cfg, ep := newConfig(t)
			sink := new(consumertest.TracesSink)
			s := startReceiver(t, cfg, ep, sink)
			td := genTraces(2, 30)
			code, header, body := post(t, ep.http, "application/x-protobuf", marshal(t, td), compressed)
			require.Equal(t, http.StatusOK, code, string(body))
			assert.Equal(t, "application/x-protobuf", header.Get("Content-Type"))
			want, err := ptraceotlp.NewExportResponse().MarshalProto()
			require.NoError(t, err)
			assert.Equal(t, want, body)
			require.Len(t, sink.AllTraces(), 1)
			checkWire(t, td, sink.AllTraces()[0])
			assert.Equal(t, int64(60), accepted(t, s, "http"))
		})
	}
}

func TestHTTPJSONGoesOnAsPdata(t *testing.T) {
	for _, compressed := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", compressed), func(t *testing.T) {
			cfg, ep := newConfig(t)
			sink := new(consumertest.TracesSink)
			s := startReceiver(t, cfg, ep, sink)
			td := genTraces(2, 5)
			js, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalJSON()
			require.NoError(t, err)
			code, header, body := post(t, ep.http, "application/json", js, compressed)
			require.Equal(t, http.StatusOK, code, string(body))
			assert.Equal(t, "application/json", header.Get("Content-Type"))
			want, err := ptraceotlp.NewExportResponse().MarshalJSON()
			require.NoError(t, err)
			assert.JSONEq(t, string(want), string(body))
			require.Len(t, sink.AllTraces(), 1)
			got := sink.AllTraces()[0]
			_, wire := wiretraces.Unwrap(got)
			assert.False(t, wire, "JSON requests go on as ordinary traces")
			assert.Equal(t, td, got)
			assert.Equal(t, int64(10), accepted(t, s, "http"))
		})
	}
}

// TestBuffersAreNotReused: the wire traces of one request keep their bytes while later
// requests of the same size arrive, over both transports, so a queue downstream may hold them.
func TestBuffersAreNotReused(t *testing.T) {
	cfg, ep := newConfig(t)
	sink := new(consumertest.TracesSink)
	startReceiver(t, cfg, ep, sink)
	conn := dial(t, ep.grpc)

	var sent [][]byte
	for i := range 6 {
		td := genTraces(2, 50)
		td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).SetName(fmt.Sprintf("request-%03d", i))
		buf := marshal(t, td)
		sent = append(sent, buf)
		send := append([]byte(nil), buf...) // the client's buffer is not the one compared
		if i%2 == 0 {
			require.NoError(t, exportRaw(context.Background(), conn, send))
		} else {
			code, _, body := post(t, ep.http, "application/x-protobuf", send, false)
			require.Equal(t, http.StatusOK, code, string(body))
		}
	}
	require.Len(t, sink.AllTraces(), len(sent))
	for i, td := range sink.AllTraces() {
		buf, ok := wiretraces.Unwrap(td)
		require.True(t, ok)
		assert.Equal(t, sent[i], buf, "request %d changed after it was received", i)
	}
}

func TestEmptyRequestIsAcknowledgedNotSent(t *testing.T) {
	cfg, ep := newConfig(t)
	sink := new(consumertest.TracesSink)
	s := startReceiver(t, cfg, ep, sink)
	td := genTraces(1, 0) // a resource and a scope, no span
	require.NoError(t, exportRaw(context.Background(), dial(t, ep.grpc), marshal(t, td)))
	code, _, body := post(t, ep.http, "application/x-protobuf", marshal(t, td), false)
	require.Equal(t, http.StatusOK, code, string(body))
	assert.Empty(t, sink.AllTraces())
	assert.Zero(t, accepted(t, s, "grpc")+accepted(t, s, "http"))
}

// nested returns a request whose one span has an attribute of depth arrays nested in each other.
func nested(depth int) ptrace.Traces {
	td := genTraces(1, 1)
	v := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().PutEmpty("deep")
	for range depth {
		v = v.SetEmptySlice().AppendEmpty()
	}
	v.SetStr("leaf")
	return td
}

func TestRefusedBytes(t *testing.T) {
	valid := marshal(t, genTraces(1, 3))
	for _, tc := range []struct {
		name   string
		modify func(*Config)
		body   []byte
		json   bool
		reason string
	}{
		{name: "truncated", body: valid[:len(valid)-1], reason: "malformed"},
		{name: "garbage", body: []byte{0xff, 0xff, 0xff}, reason: "malformed"},
		{name: "too large", modify: func(c *Config) { c.MaxRequestBytes = len(valid) - 1 }, body: valid, reason: "too_large"},
		{name: "too deep", modify: func(c *Config) { c.MaxNesting = 2 }, body: marshal(t, nested(3)), reason: "too_deep"},
		{name: "malformed JSON", body: []byte(`{"resourceSpans": [`), json: true, reason: "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, ep := newConfig(t)
			if tc.modify != nil {
				tc.modify(cfg)
			}
			sink := new(consumertest.TracesSink)
			s := startReceiver(t, cfg, ep, sink)

			contentType := "application/x-protobuf"
			if tc.json {
				contentType = "application/json"
			} else {
				err := exportRaw(context.Background(), dial(t, ep.grpc), tc.body)
				assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
				assert.Equal(t, int64(1), refusedRequests(t, s, "grpc", tc.reason))
			}
			code, header, body := post(t, ep.http, contentType, tc.body, false)
			assert.Equal(t, http.StatusBadRequest, code)
			assert.Equal(t, contentType, header.Get("Content-Type"))
			st := decodeStatus(t, contentType, body)
			assert.Equal(t, int32(codes.InvalidArgument), st.GetCode())
			assert.NotEmpty(t, st.GetMessage())
			assert.Equal(t, int64(1), refusedRequests(t, s, "http", tc.reason))

			assert.Empty(t, sink.AllTraces())
			assert.Zero(t, accepted(t, s, "grpc")+accepted(t, s, "http"))
		})
	}
}

func decodeStatus(t *testing.T, contentType string, body []byte) *spb.Status {
	t.Helper()
	st := new(spb.Status)
	if contentType == "application/json" {
		require.NoError(t, protojson.Unmarshal(body, st), string(body))
	} else {
		require.NoError(t, proto.Unmarshal(body, st))
	}
	return st
}

func TestDownstreamErrors(t *testing.T) {
	throttled, err := status.New(codes.ResourceExhausted, "slow down").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(3 * time.Second)})
	require.NoError(t, err)
	for _, tc := range []struct {
		name       string
		err        error
		code       codes.Code
		httpStatus int
		retryAfter string
	}{
		// The memory limiter's refusal is a plain error: retryable.
		{name: "retryable", err: errRefused, code: codes.Unavailable, httpStatus: http.StatusServiceUnavailable},
		{name: "permanent", err: consumererror.NewPermanent(errRefused), code: codes.Internal, httpStatus: http.StatusInternalServerError},
		{name: "status kept", err: throttled.Err(), code: codes.ResourceExhausted, httpStatus: http.StatusTooManyRequests, retryAfter: "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, ep := newConfig(t)
			s := startReceiver(t, cfg, ep, errSink{err: tc.err})
			td := genTraces(1, 4)

			_, err := ptraceotlp.NewGRPCClient(dial(t, ep.grpc)).Export(context.Background(), ptraceotlp.NewExportRequestFromTraces(td))
			assert.Equal(t, tc.code, status.Code(err), "%v", err)
			assert.Contains(t, status.Convert(err).Message(), status.Convert(tc.err).Message())

			for _, contentType := range []string{"application/x-protobuf", "application/json"} {
				body := marshal(t, td)
				if contentType == "application/json" {
					body, err = ptraceotlp.NewExportRequestFromTraces(td).MarshalJSON()
					require.NoError(t, err)
				}
				code, header, answer := post(t, ep.http, contentType, body, false)
				assert.Equal(t, tc.httpStatus, code, contentType)
				assert.Equal(t, tc.retryAfter, header.Get("Retry-After"))
				assert.Equal(t, int32(tc.code), decodeStatus(t, contentType, answer).GetCode())
			}
			// Counted as the otlp receiver counts them: refused spans, none accepted.
			assert.Equal(t, int64(4), refusedSpans(t, s, "grpc"))
			assert.Equal(t, int64(8), refusedSpans(t, s, "http"))
			assert.Zero(t, accepted(t, s, "grpc")+accepted(t, s, "http"))
			assert.Zero(t, sumOf(t, s.tel, "otelcol_receiver_otlpwire_refused_requests"))
		})
	}
}

func TestHTTPMethodPathAndContentType(t *testing.T) {
	cfg, ep := newConfig(t)
	cfg.Protocols.HTTP.Get().TracesURLPath = "/custom/traces"
	sink := new(consumertest.TracesSink)
	startReceiver(t, cfg, ep, sink)
	url := ep.http[:len(ep.http)-len("/v1/traces")]

	resp, err := http.Get(url + "/custom/traces")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

	code, _, _ := post(t, url+"/custom/traces", "text/plain", []byte("x"), false)
	assert.Equal(t, http.StatusUnsupportedMediaType, code)
	code, _, _ = post(t, url+"/v1/traces", "application/x-protobuf", marshal(t, genTraces(1, 1)), false)
	assert.Equal(t, http.StatusNotFound, code)
	code, _, _ = post(t, url+"/custom/traces", "application/x-protobuf; charset=utf-8", marshal(t, genTraces(1, 1)), false)
	assert.Equal(t, http.StatusOK, code)
	assert.Len(t, sink.AllTraces(), 1)
}

// TestSameAnswersAsOTLPReceiver sends the same requests to the otlp receiver and to this one,
// each in front of the same kind of consumer, and compares what the clients get and what the
// receivers count. The one difference on purpose: a protobuf request that does not decode is
// refused by this receiver's decoder, whose message differs from pdata's (the code and the
// HTTP status are the same), and over gRPC with InvalidArgument where the otlp receiver's gRPC
// server answers Internal ("grpc: failed to unmarshal"); TestRefusedBytes covers it.
func TestSameAnswersAsOTLPReceiver(t *testing.T) {
	td := genTraces(2, 6)
	pb := marshal(t, td)
	js, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalJSON()
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		next consumer.Traces
	}{
		{"accepted", consumertest.NewNop()},
		{"retryable", errSink{err: errRefused}},
		{"permanent", errSink{err: consumererror.NewPermanent(errRefused)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, ep := newConfig(t)
			ours := startReceiver(t, cfg, ep, tc.next)
			stock := startStock(t, tc.next)

			_, err := ptraceotlp.NewGRPCClient(dial(t, ours.grpc)).Export(context.Background(), ptraceotlp.NewExportRequestFromTraces(td))
			_, errStock := ptraceotlp.NewGRPCClient(dial(t, stock.grpc)).Export(context.Background(), ptraceotlp.NewExportRequestFromTraces(td))
			assert.Equal(t, status.Code(errStock), status.Code(err))
			assert.Equal(t, status.Convert(errStock).Message(), status.Convert(err).Message())
			resp, err := exportRawResponse(context.Background(), dial(t, ours.grpc), pb)
			respStock, errStock := exportRawResponse(context.Background(), dial(t, stock.grpc), pb)
			assert.Equal(t, status.Code(errStock), status.Code(err))
			assert.Equal(t, respStock, resp, "the response's bytes")
			for _, req := range []struct {
				method, contentType string
				body                []byte
			}{
				{http.MethodPost, "application/x-protobuf", pb},
				{http.MethodPost, "application/json", js},
				{http.MethodPost, "application/json", []byte(`{"resourceSpans": [`)},
				{http.MethodPost, "application/x-protobuf", marshal(t, genTraces(1, 0))},
				{http.MethodPost, "text/plain", pb},
				{http.MethodPut, "application/json", js},
			} {
				oursCode, oursHeader, oursBody := do(t, req.method, ours.http, req.contentType, req.body)
				stockCode, stockHeader, stockBody := do(t, req.method, stock.http, req.contentType, req.body)
				what := req.method + " " + req.contentType
				assert.Equal(t, stockCode, oursCode, what)
				assert.Equal(t, stockHeader.Get("Content-Type"), oursHeader.Get("Content-Type"), what)
				assert.Equal(t, stockHeader.Get("Retry-After"), oursHeader.Get("Retry-After"), what)
				if oursCode == http.StatusBadRequest {
					// Refused bytes: pdata's JSON decoder on both sides, but the messages
					// carry details of the decoder state; the codes must agree.
					assert.Equal(t, decodeStatus(t, req.contentType, stockBody).GetCode(), decodeStatus(t, req.contentType, oursBody).GetCode(), what)
					continue
				}
				assert.Equal(t, string(stockBody), string(oursBody), what)
			}
			for _, name := range []string{"otelcol_receiver_accepted_spans", "otelcol_receiver_refused_spans", "otelcol_receiver_failed_spans"} {
				for _, transport := range []string{"grpc", "http"} {
					assert.Equal(t, sumOf(t, stock.tel, name, "transport", transport), sumOf(t, ours.tel, name, "transport", transport), "%s %s", name, transport)
				}
			}
		})
	}
}

func do(t *testing.T, method, url, contentType string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	if method == http.MethodPost {
		return post(t, url, contentType, body, false)
	}
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	got := make([]byte, 512)
	n, _ := resp.Body.Read(got)
	return resp.StatusCode, resp.Header, got[:n]
}

// TestShutdownWaitsForRequestsInFlight: like the otlp receiver's, Shutdown returns only once
// the requests being consumed have finished, and their clients get their answers.
func TestShutdownWaitsForRequestsInFlight(t *testing.T) {
	cfg, ep := newConfig(t)
	sink := newGatedSink()
	r, err := NewFactory().CreateTraces(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))

	td := genTraces(1, 2)
	answers := make(chan error, 2)
	go func() {
		_, err := ptraceotlp.NewGRPCClient(dial(t, ep.grpc)).Export(context.Background(), ptraceotlp.NewExportRequestFromTraces(td))
		answers <- err
	}()
	go func() {
		code, _, body := post(t, ep.http, "application/x-protobuf", marshal(t, td), false)
		if code != http.StatusOK {
			answers <- fmt.Errorf("HTTP %d: %s", code, body)
			return
		}
		answers <- nil
	}()
	<-sink.entered
	<-sink.entered

	shutdown := make(chan error, 1)
	go func() { shutdown <- r.Shutdown(context.Background()) }()
	select {
	case err := <-shutdown:
		t.Fatalf("Shutdown returned (%v) while two requests were being consumed", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(sink.release)
	require.NoError(t, <-shutdown)
	require.NoError(t, <-answers)
	require.NoError(t, <-answers)
	assert.Equal(t, 2, sink.count())

	// Nothing listens any more.
	_, err = http.Post(ep.http, "application/x-protobuf", nil)
	assert.Error(t, err)
}

// TestOneProtocolOnly: a protocol left out of the config gets no server, as in the otlp receiver.
func TestOneProtocolOnly(t *testing.T) {
	t.Run("grpc", func(t *testing.T) {
		cfg, ep := newConfig(t)
		cfg.Protocols.HTTP = configoptional.None[otlpreceiver.HTTPConfig]()
		sink := new(consumertest.TracesSink)
		startReceiver(t, cfg, ep, sink)
		_, err := ptraceotlp.NewGRPCClient(dial(t, ep.grpc)).Export(context.Background(), ptraceotlp.NewExportRequestFromTraces(genTraces(1, 2)))
		require.NoError(t, err)
		assert.Len(t, sink.AllTraces(), 1)
		_, err = http.Post(ep.http, "application/x-protobuf", nil)
		assert.Error(t, err, "no HTTP server")
	})
	t.Run("http", func(t *testing.T) {
		cfg, ep := newConfig(t)
		cfg.Protocols.GRPC = configoptional.None[configgrpc.ServerConfig]()
		sink := new(consumertest.TracesSink)
		startReceiver(t, cfg, ep, sink)
		code, _, _ := post(t, ep.http, "application/x-protobuf", marshal(t, genTraces(1, 2)), false)
		assert.Equal(t, http.StatusOK, code)
		assert.Len(t, sink.AllTraces(), 1)
	})
}
