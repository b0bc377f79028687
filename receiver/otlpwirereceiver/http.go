package otlpwirereceiver // import "github.com/otelcol-red/otelcol-red/receiver/otlpwirereceiver"

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// The OTLP/HTTP traces endpoint: the otlp receiver's handler (methods, content types, status
// codes, error bodies as google.rpc.Status, Retry-After), with protobuf bodies going the wire
// way (consumeWire) and JSON bodies decoded into pdata (consumeJSON).
//
// Buffer ownership: the body is read into a slice made for this request (readBody) that
// nothing else references, so it becomes the wire traces' buffer as it is. confighttp's
// decompression hands the handler a reader of decompressed bytes; they are read into that
// slice likewise.

const (
	pbContentType   = "application/x-protobuf"
	jsonContentType = "application/json"

	// defaultMaxRequestBodySize is confighttp's own default for max_request_body_size
	// (20 MiB), which its server applies when the setting is 0.
	defaultMaxRequestBodySize = 20 << 20
)

// bodyEncoding is one of the two content types the endpoint speaks.
type bodyEncoding struct {
	contentType   string
	response      []byte // the empty ExportTraceServiceResponse, encoded
	marshalStatus func(*spb.Status) ([]byte, error)
}

var (
	pbEncoding = &bodyEncoding{
		contentType:   pbContentType,
		response:      mustEncode(ptraceotlp.NewExportResponse().MarshalProto()),
		marshalStatus: func(s *spb.Status) ([]byte, error) { return proto.Marshal(s) },
	}
	jsonEncoding = &bodyEncoding{
		contentType:   jsonContentType,
		response:      mustEncode(ptraceotlp.NewExportResponse().MarshalJSON()),
		marshalStatus: func(s *spb.Status) ([]byte, error) { return protojson.Marshal(s) },
	}
	// fallbackStatus answers when a status cannot be encoded (code 13, Internal), as the
	// otlp receiver does.
	fallbackStatus = []byte(`{"code": 13, "message": "failed to marshal error message"}`)
)

func mustEncode(b []byte, err error) []byte {
	if err != nil {
		panic("BUG: cannot encode the empty ExportTraceServiceResponse: " + err.Error())
	}
	return b
}

// httpTraces serves the traces path.
type httpTraces struct {
	r *otlpWireReceiver
	// presizeLimit bounds the buffer made from a request's Content-Length before reading:
	// the server's max_request_body_size, which refuses a longer body anyway; a declared
	// length must not make it allocate more than it will ever read.
	presizeLimit int64
}

func newHTTPTraces(r *otlpWireReceiver, maxRequestBodySize int64) *httpTraces {
	if maxRequestBodySize <= 0 {
		maxRequestBodySize = defaultMaxRequestBodySize
	}
	return &httpTraces{r: r, presizeLimit: maxRequestBodySize}
}

func (h *httpTraces) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	enc, ok := readContentType(w, req)
	if !ok {
		return
	}
	body, err := readBody(req.Body, req.ContentLength, h.presizeLimit)
	if err == nil {
		err = req.Body.Close()
	}
	if err != nil {
		writeError(w, enc, err, http.StatusBadRequest)
		return
	}
	if enc == pbEncoding {
		err = h.r.consumeWire(req.Context(), h.r.obsHTTP, transportHTTP, body)
	} else {
		err = h.r.consumeJSON(req.Context(), body)
	}
	if err != nil {
		writeError(w, enc, err, http.StatusInternalServerError)
		return
	}
	writeResponse(w, enc.contentType, http.StatusOK, enc.response)
}

// readBody reads r to its end into a new slice, as io.ReadAll does, but sized from the
// declared Content-Length when there is one within limit, so that a protobuf request is read
// in one allocation of its exact size instead of io.ReadAll's doubling copies. Without one
// (chunked, or decompressed by confighttp, which clears it) it grows as io.ReadAll does.
func readBody(r io.Reader, contentLength, limit int64) ([]byte, error) {
	size := 512
	if contentLength > 0 && contentLength <= limit {
		size = int(contentLength) + 1 // +1: the read that returns io.EOF needs room to try
	}
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				return b, nil
			}
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

func readContentType(w http.ResponseWriter, req *http.Request) (*bodyEncoding, bool) {
	if req.Method != http.MethodPost {
		writeResponse(w, "text/plain", http.StatusMethodNotAllowed,
			fmt.Appendf(nil, "%v method not allowed, supported: [POST]", http.StatusMethodNotAllowed))
		return nil, false
	}
	switch mediaType(req.Header.Get("Content-Type")) {
	case pbContentType:
		return pbEncoding, true
	case jsonContentType:
		return jsonEncoding, true
	default:
		writeResponse(w, "text/plain", http.StatusUnsupportedMediaType,
			fmt.Appendf(nil, "%v unsupported media type, supported: [%s, %s]", http.StatusUnsupportedMediaType, jsonContentType, pbContentType))
		return nil, false
	}
}

func mediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return mt
}

// writeError answers err as a google.rpc.Status: a status error with the HTTP code its gRPC
// code maps to, any other error with statusCode.
func writeError(w http.ResponseWriter, enc *bodyEncoding, err error, statusCode int) {
	s, ok := status.FromError(err)
	if ok {
		statusCode = httpStatusFromCode(s.Code())
	} else {
		s = statusFromHTTPCode(err.Error(), statusCode)
	}
	writeStatus(w, enc, statusCode, s)
}

// errorHandler is confighttp's error handler (decompression, body size, auth): the error as
// a google.rpc.Status in the request's content type, JSON for any but protobuf.
func errorHandler(w http.ResponseWriter, r *http.Request, errMsg string, statusCode int) {
	enc := jsonEncoding
	if mediaType(r.Header.Get("Content-Type")) == pbContentType {
		enc = pbEncoding
	}
	writeStatus(w, enc, statusCode, statusFromHTTPCode(errMsg, statusCode))
}

func writeStatus(w http.ResponseWriter, enc *bodyEncoding, statusCode int, s *status.Status) {
	// OTLP/HTTP throttling: a retryable answer carries the delay the status asks for.
	if statusCode == http.StatusTooManyRequests || statusCode == http.StatusServiceUnavailable {
		for _, d := range s.Details() {
			if ri, ok := d.(*errdetails.RetryInfo); ok {
				w.Header().Set("Retry-After", strconv.FormatInt(int64(ri.GetRetryDelay().AsDuration()/time.Second), 10))
				break
			}
		}
	}
	msg, err := enc.marshalStatus(s.Proto())
	if err != nil {
		writeResponse(w, jsonContentType, http.StatusInternalServerError, fallbackStatus)
		return
	}
	writeResponse(w, enc.contentType, statusCode, msg)
}

func writeResponse(w http.ResponseWriter, contentType string, statusCode int, msg []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(statusCode)
	// Nothing to do when the client is gone.
	_, _ = w.Write(msg)
}

// httpStatusFromCode maps a gRPC code to the HTTP status OTLP/HTTP answers with, as the otlp
// receiver does: the retryable codes to 503 (ResourceExhausted to 429), the others to their
// client-error statuses or 500.
func httpStatusFromCode(c codes.Code) int {
	switch c {
	case codes.Canceled, codes.DeadlineExceeded, codes.Aborted, codes.OutOfRange, codes.Unavailable, codes.DataLoss:
		return http.StatusServiceUnavailable
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.InvalidArgument:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.Unimplemented:
		return http.StatusNotFound
	default:
		return http.StatusInternalServerError
	}
}

// statusFromHTTPCode is the otlp receiver's status for an error that has only an HTTP code.
func statusFromHTTPCode(msg string, statusCode int) *status.Status {
	var c codes.Code
	switch statusCode {
	case http.StatusBadRequest:
		c = codes.InvalidArgument
	case http.StatusUnauthorized:
		c = codes.Unauthenticated
	case http.StatusForbidden:
		c = codes.PermissionDenied
	case http.StatusNotFound:
		c = codes.Unimplemented
	case http.StatusTooManyRequests:
		c = codes.ResourceExhausted
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		c = codes.Unavailable
	default:
		c = codes.Unknown
	}
	return status.New(c, msg)
}
