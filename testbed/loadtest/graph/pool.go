package graph

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

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// Shape is a call graph load for the service graph scenario: every service calls every other
// one at each of its endpoints, with and without failures, and some of the callees' handlers query a
// database. One call is a CLIENT span in the caller and a SERVER span, its child, in the callee,
// each in its own service's resource as the two SDKs export them.
type Shape struct {
	// Services call each other: Services × (Services-1) service edges.
	Services int
	// Endpoints are the server span names of each service; a caller has one client span name per
	// callee and endpoint.
	Endpoints int
	// Databases are the databases the callees query: service s uses "db-<s mod Databases>", one
	// database edge per service.
	Databases int
	// DBEvery gives one call in DBEvery a database CLIENT span (db.system, db.name), a child of
	// the call's server span.
	DBEvery int
	// SplitEvery puts the server span (and database span) of one call in SplitEvery in the next
	// request instead of the client span's, as when the two services' SDKs export in different
	// batches: the connectors must keep the first half until the second comes.
	SplitEvery int
}

// Shape100k is the scenario's graph: 100 services each calling the 99 others at 5 endpoints,
// 10 databases: 100,400 RED series and 10,000 edges.
var Shape100k = Shape{Services: 100, Endpoints: 5, Databases: 10, DBEvery: 10, SplitEvery: 4}

// dbOps are the database span names, each with both statuses.
var dbOps = []string{"SELECT", "INSERT"}

// Calls is the number of service-to-service calls in one pass of the pool: each (caller, callee,
// endpoint) once with an ok and once with a failed client span.
func (g Shape) Calls() int {
	return g.Services * (g.Services - 1) * g.Endpoints * harness.StatusesPerName
}

// DBCalls is the number of database spans in one pass.
func (g Shape) DBCalls() int { return (g.Calls() + g.DBEvery - 1) / g.DBEvery }

// Series is the RED series a pass produces: client span names per callee and endpoint, server
// span names per endpoint, database span names, each with both statuses.
func (g Shape) Series() int {
	return g.Services * ((g.Services-1)*g.Endpoints + g.Endpoints + len(dbOps)) * harness.StatusesPerName
}

// EdgeCount is the distinct client → server pairs: every ordered pair of services and each
// service's database.
func (g Shape) EdgeCount() int { return g.Services*(g.Services-1) + g.Services }

// String names the graph by its size.
func (g Shape) String() string {
	return fmt.Sprintf("%d services calling each other at %d endpoints, %d databases: %s RED series, %s edges",
		g.Services, g.Endpoints, g.Databases, harness.HumanCount(float64(g.Series())), harness.HumanCount(float64(g.EdgeCount())))
}

func (g Shape) validate() error {
	if g.Services < 2 || g.Endpoints < 1 || g.Databases < 1 || g.DBEvery < 1 || g.SplitEvery < 1 {
		return errors.New("graph shape needs two services, one endpoint, one database, DBEvery and SplitEvery of 1 or more")
	}
	return nil
}

// Pool is the requests of one pass of a call graph, and the graph they were built from.
type Pool struct {
	*harness.Pool
	Graph Shape
}

// graphSpan is one span of a pass before it is placed in a request.
type graphSpan struct {
	service       int
	name          string
	kind          ptrace.SpanKind
	failed        bool
	trace         [16]byte
	id, parent    [8]byte
	start         time.Time
	duration      time.Duration
	dbSystem, dbN string
}

// NewPool builds one pass of g's calls as requests of at most spansPerRequest spans: the
// calls in order (caller by caller), a split call's server and database spans moved a request
// later (to the end of the pass for the last calls), and within a request the spans grouped into
// one resource per service. A request's CLIENT spans come no later than their server spans, so
// whatever prefix of the pool passes the load sends, every server span it sent has its client
// span sent too, and each CLIENT span sent is one edge (paired, a database, or after the ttl a
// virtual node): Pool.Edges counts them per request.
func NewPool(g Shape, spansPerRequest int, seed uint64) (*Pool, error) {
	if err := g.validate(); err != nil {
		return nil, err
	}
	if spansPerRequest <= 0 {
		return nil, errors.New("spans per request must be positive")
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	stream := graphStream(g, spansPerRequest, rng)
	p := &Pool{Pool: &harness.Pool{SpansPerRequest: spansPerRequest}, Graph: g}
	for from := 0; from < len(stream); from += spansPerRequest {
		chunk := stream[from:min(from+spansPerRequest, len(stream))]
		td, edges := graphRequest(chunk)
		body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
		if err != nil {
			return nil, fmt.Errorf("cannot marshal request: %w", err)
		}
		p.Encoded = append(p.Encoded, body)
		p.Spans = append(p.Spans, len(chunk))
		p.Edges = append(p.Edges, edges)
	}
	return p, nil
}

// graphStream returns the spans of one pass in sending order.
func graphStream(g Shape, spansPerRequest int, rng *rand.Rand) []graphSpan {
	base := time.Now().Add(-time.Minute)
	out := make([]graphSpan, 0, 2*g.Calls()+g.DBCalls())
	type deferred struct {
		at    int
		spans []graphSpan
	}
	var later []deferred
	k := 0
	for caller := range g.Services {
		for j := range g.Services - 1 {
			callee := (caller + 1 + j) % g.Services
			for e := range g.Endpoints {
				for st := range harness.StatusesPerName {
					for len(later) > 0 && later[0].at <= len(out) {
						out = append(out, later[0].spans...)
						later = later[1:]
					}
					client, rest := graphCall(g, rng, base, k, caller, callee, e, st == 1, j%2 == 0)
					out = append(out, client)
					if k%g.SplitEvery == 1 {
						later = append(later, deferred{at: len(out) + spansPerRequest, spans: rest})
					} else {
						out = append(out, rest...)
					}
					k++
				}
			}
		}
	}
	for _, d := range later {
		out = append(out, d.spans...)
	}
	return out
}

// graphCall returns call k's client span and its server span (with a database span for one call
// in DBEvery). A failed client span has a failed server span when serverFails (the callee
// answered with an error), else an ok one (the client gave up: a timeout).
func graphCall(g Shape, rng *rand.Rand, base time.Time, k, caller, callee, endpoint int, failed, serverFails bool) (graphSpan, []graphSpan) {
	var trace [16]byte
	binary.LittleEndian.PutUint64(trace[:8], rng.Uint64())
	binary.LittleEndian.PutUint64(trace[8:], rng.Uint64()|1)
	// Server durations spread log-uniformly over 100 µs to 1 s; the client waits longer by the
	// network's 50 µs to 2 ms.
	server := time.Duration(float64(100*time.Microsecond) * math.Pow(10, rng.Float64()*4))
	network := time.Duration(50_000 + rng.IntN(1_950_000))
	start := base.Add(time.Duration(rng.IntN(int(time.Minute))))
	client := graphSpan{
		service: caller, name: fmt.Sprintf("GET /svc-%04d/op-%d", callee, endpoint), kind: ptrace.SpanKindClient,
		failed: failed, trace: trace, id: spanID(rng), start: start, duration: server + network,
	}
	srv := graphSpan{
		service: callee, name: fmt.Sprintf("GET /op-%d", endpoint), kind: ptrace.SpanKindServer,
		failed: failed && serverFails, trace: trace, id: spanID(rng), parent: client.id,
		start: start.Add(network / 2), duration: server,
	}
	rest := []graphSpan{srv}
	if k%g.DBEvery == 0 {
		// The caller picks the query and its outcome, so that each callee, called by every other
		// service, emits every database series.
		rest = append(rest, graphSpan{
			service: callee, name: dbOps[caller%len(dbOps)], kind: ptrace.SpanKindClient, failed: (caller/len(dbOps))%2 == 1,
			trace: trace, id: spanID(rng), parent: srv.id, start: srv.start, duration: server / 2,
			dbSystem: "postgresql", dbN: fmt.Sprintf("db-%02d", callee%g.Databases),
		})
	}
	return client, rest
}

func spanID(rng *rand.Rand) [8]byte {
	var id [8]byte
	binary.LittleEndian.PutUint64(id[:], rng.Uint64()|1)
	return id
}

// graphRequest puts spans into one request, a resource per service in the order they first come,
// and returns it with its CLIENT span count.
func graphRequest(spans []graphSpan) (ptrace.Traces, int) {
	td := ptrace.NewTraces()
	byService := map[int]ptrace.SpanSlice{}
	edges := 0
	for _, gs := range spans {
		slice, ok := byService[gs.service]
		if !ok {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", fmt.Sprintf("svc-%04d", gs.service))
			rs.Resource().Attributes().PutStr("service.instance.id", fmt.Sprintf("svc-%04d-0", gs.service))
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName("otelcol-red/testbed")
			slice = ss.Spans()
			byService[gs.service] = slice
		}
		s := slice.AppendEmpty()
		s.SetTraceID(gs.trace)
		s.SetSpanID(gs.id)
		s.SetParentSpanID(gs.parent)
		s.SetName(gs.name)
		s.SetKind(gs.kind)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(gs.start))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(gs.start.Add(gs.duration)))
		if gs.dbSystem != "" {
			s.Attributes().PutStr("db.system", gs.dbSystem)
			s.Attributes().PutStr("db.name", gs.dbN)
		} else {
			s.Attributes().PutStr("http.request.method", "GET")
		}
		if gs.failed {
			s.Status().SetCode(ptrace.StatusCodeError)
			s.Status().SetMessage("synthetic failure")
		} else {
			s.Status().SetCode(ptrace.StatusCodeOk)
		}
		if gs.kind == ptrace.SpanKindClient {
			edges++
		}
	}
	return td, edges
}
