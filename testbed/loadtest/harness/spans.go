package harness

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// kindsPerName and StatusesPerName are the span kinds (server, client) and status codes (ok, error)
// every span name is emitted with; with the service and the span name they make one RED series.
const (
	kindsPerName    = 2
	StatusesPerName = 2
	combosPerName   = kindsPerName * StatusesPerName
)

// Shape is the cardinality of a load: Services × SpanNames × 2 kinds × 2 statuses series, which is
// what spanmetrics (and tracemetrics, compatible with it) key their series on by default.
type Shape struct {
	Services  int
	SpanNames int
}

// The cardinalities of the comparison scenarios and the probes: ~1k, ~100k and a million RED series.
var (
	Shape1k   = Shape{Services: 10, SpanNames: 25}
	Shape100k = Shape{Services: 100, SpanNames: 250}
	Shape1M   = Shape{Services: 1000, SpanNames: 250}
)

// Series is the number of distinct RED series the shape produces.
func (s Shape) Series() int { return s.Services * s.SpanNames * combosPerName }

// String names the shape by its series count: "1k series", "100k series", "1M series".
func (s Shape) String() string {
	n := s.Series()
	if n >= 1_000_000 && n%1_000_000 == 0 {
		return fmt.Sprintf("%dM series", n/1_000_000)
	}
	if n >= 1000 && n%1000 == 0 {
		return fmt.Sprintf("%dk series", n/1000)
	}
	return fmt.Sprintf("%d series", n)
}

// Pool is a fixed set of OTLP trace requests, encoded once before the run so that the load
// generator spends its CPU on sending, not on building and marshalling spans: on a 2-core machine
// the generator competes with both collectors, and a cheap generator keeps it out of the result.
// Cycling through the pool sends every series of the shape the same number of times per cycle.
type Pool struct {
	Shape           Shape
	SpansPerRequest int
	// Traces holds the requests as pdata, for senders that re-encode (the Kafka sender).
	Traces []ptrace.Traces
	// Encoded holds the same requests as OTLP ExportTraceServiceRequest protobuf bytes.
	Encoded [][]byte
	// Spans holds each request's span count where requests differ in size (a call graph's pool);
	// nil when every request has SpansPerRequest.
	Spans []int
	// Edges holds each request's CLIENT spans, the service graph edges it adds (a call graph's
	// pool); nil for pools that are not call graphs.
	Edges []int
}

// SpansOf is the number of spans of request i.
func (p *Pool) SpansOf(i int) int {
	if p.Spans != nil {
		return p.Spans[i]
	}
	return p.SpansPerRequest
}

// minRequests keeps some variety (trace ids, durations) in a pool whose cycle is shorter than
// this many requests.
const minRequests = 8

// NewPool builds the requests for shape, spansPerRequest spans each. Consecutive spans walk the
// series in order, so a request holds a few services with many span names each, like a batch an
// agent sends; the number of requests is a multiple of the cycle so that a full pool pass covers
// every series equally.
func NewPool(shape Shape, spansPerRequest int, seed uint64) (*Pool, error) {
	return newPool(shape, spansPerRequest, seed, true)
}

// NewEncodedPool is NewPool without Traces: at a million series a second copy of every span as
// pdata would take the host's memory from the collectors under test, and the OTLP and Kafka
// senders use Encoded only.
func NewEncodedPool(shape Shape, spansPerRequest int, seed uint64) (*Pool, error) {
	return newPool(shape, spansPerRequest, seed, false)
}

func newPool(shape Shape, spansPerRequest int, seed uint64, keepTraces bool) (*Pool, error) {
	if shape.Services <= 0 || shape.SpanNames <= 0 {
		return nil, errors.New("shape must have at least one service and one span name")
	}
	if spansPerRequest <= 0 {
		return nil, errors.New("spans per request must be positive")
	}
	series := shape.Series()
	requests := (series + spansPerRequest - 1) / spansPerRequest
	for requests < minRequests {
		requests *= 2
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	base := time.Now().Add(-time.Minute)
	p := &Pool{Shape: shape, SpansPerRequest: spansPerRequest}
	next := 0
	for range requests {
		td := ptrace.NewTraces()
		var (
			spans       ptrace.SpanSlice
			lastService = -1
		)
		for range spansPerRequest {
			service, name, kind, isError := shape.decode(next % series)
			next++
			if service != lastService {
				rs := td.ResourceSpans().AppendEmpty()
				rs.Resource().Attributes().PutStr("service.name", fmt.Sprintf("svc-%04d", service))
				rs.Resource().Attributes().PutStr("service.instance.id", fmt.Sprintf("svc-%04d-0", service))
				ss := rs.ScopeSpans().AppendEmpty()
				ss.Scope().SetName("otelcol-red/testbed")
				spans = ss.Spans()
				lastService = service
			}
			fillSpan(spans.AppendEmpty(), rng, base, name, kind, isError)
		}
		body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
		if err != nil {
			return nil, fmt.Errorf("cannot marshal request: %w", err)
		}
		if keepTraces {
			p.Traces = append(p.Traces, td)
		}
		p.Encoded = append(p.Encoded, body)
	}
	return p, nil
}

// decode maps a series index to its dimensions.
func (s Shape) decode(i int) (service, name int, kind ptrace.SpanKind, isError bool) {
	combo := i % combosPerName
	rest := i / combosPerName
	name = rest % s.SpanNames
	service = rest / s.SpanNames
	kind = ptrace.SpanKindServer
	if combo%kindsPerName == 1 {
		kind = ptrace.SpanKindClient
	}
	return service, name, kind, combo/kindsPerName == 1
}

func fillSpan(span ptrace.Span, rng *rand.Rand, base time.Time, name int, kind ptrace.SpanKind, isError bool) {
	var traceID [16]byte
	var spanID [8]byte
	binary.LittleEndian.PutUint64(traceID[:8], rng.Uint64())
	binary.LittleEndian.PutUint64(traceID[8:], rng.Uint64())
	binary.LittleEndian.PutUint64(spanID[:], rng.Uint64()|1)
	span.SetTraceID(traceID)
	span.SetSpanID(spanID)
	span.SetName(fmt.Sprintf("op-%04d", name))
	span.SetKind(kind)
	// Durations spread over four decades (100 µs to 1 s, log-uniform) so that every histogram
	// bucket of the default layouts gets hits, as with real traffic.
	d := time.Duration(float64(100*time.Microsecond) * math.Pow(10, rng.Float64()*4))
	start := base.Add(time.Duration(rng.IntN(int(time.Minute))))
	span.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	span.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(d)))
	span.Attributes().PutStr("http.request.method", "GET")
	if isError {
		span.Status().SetCode(ptrace.StatusCodeError)
		span.Status().SetMessage("synthetic failure")
	} else {
		span.Status().SetCode(ptrace.StatusCodeOk)
	}
}
