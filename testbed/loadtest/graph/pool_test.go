package graph

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// TestGraphPoolShape decodes the scenario's pool and checks it against what Shape promises:
// the RED series and edges it counts, every client span counted as an edge in Pool.Edges, the
// spans counted in Pool.Spans, server spans never before their client span, and split calls.
func TestGraphPoolShape(t *testing.T) {
	g := Shape100k
	require.Equal(t, 100_400, g.Series())
	require.Equal(t, 10_000, g.EdgeCount())
	const perRequest = 1000
	p, err := NewPool(g, perRequest, 1)
	require.NoError(t, err)
	require.Len(t, p.Spans, len(p.Encoded))
	require.Len(t, p.Edges, len(p.Encoded))

	type series struct {
		service, name string
		kind          ptrace.SpanKind
		failed        bool
	}
	type half struct {
		service string
		request int
		dbName  string
	}
	red := map[series]bool{}
	clients := map[pcommon.SpanID]half{}
	servers := map[pcommon.SpanID]half{} // by parent span id
	var spans, edgesCounted, dbSpans int
	for i, body := range p.Encoded {
		req := ptraceotlp.NewExportRequest()
		require.NoError(t, req.UnmarshalProto(body))
		td := req.Traces()
		require.Equal(t, p.Spans[i], td.SpanCount(), "request %d", i)
		require.LessOrEqual(t, td.SpanCount(), perRequest)
		spans += td.SpanCount()
		edgesCounted += p.Edges[i]
		clientsHere := 0
		for _, rs := range td.ResourceSpans().All() {
			svc, ok := rs.Resource().Attributes().Get("service.name")
			require.True(t, ok)
			for _, ss := range rs.ScopeSpans().All() {
				for _, s := range ss.Spans().All() {
					red[series{svc.Str(), s.Name(), s.Kind(), s.Status().Code() == ptrace.StatusCodeError}] = true
					switch s.Kind() {
					case ptrace.SpanKindClient:
						clientsHere++
						h := half{service: svc.Str(), request: i}
						if db, ok := s.Attributes().Get("db.name"); ok {
							h.dbName = db.Str()
							dbSpans++
						}
						clients[s.SpanID()] = h
					case ptrace.SpanKindServer:
						servers[s.ParentSpanID()] = half{service: svc.Str(), request: i}
					default:
						t.Fatalf("unexpected span kind %v", s.Kind())
					}
				}
			}
		}
		require.Equal(t, p.Edges[i], clientsHere, "request %d", i)
	}
	require.Equal(t, g.Series(), len(red), "RED series")
	require.Equal(t, 2*g.Calls()+g.DBCalls(), spans)
	require.Equal(t, g.DBCalls(), dbSpans)
	require.Equal(t, g.Calls()+g.DBCalls(), edgesCounted)
	require.Equal(t, g.Calls(), len(servers), "server spans")

	edges := map[[2]string]bool{}
	split := 0
	for id, c := range clients {
		if c.dbName != "" {
			edges[[2]string{c.service, c.dbName}] = true
			continue
		}
		s, ok := servers[id]
		require.True(t, ok, "client span without its server span")
		require.NotEqual(t, c.service, s.service)
		require.LessOrEqual(t, c.request, s.request, "a server span is sent before its client span")
		if s.request > c.request {
			split++
		}
		edges[[2]string{c.service, s.service}] = true
	}
	require.Equal(t, g.EdgeCount(), len(edges), "edges")
	// Every SplitEvery-th call is split, but for the last ones of the pass, whose server spans
	// follow at once (within the last request).
	require.GreaterOrEqual(t, split, g.Calls()/g.SplitEvery-perRequest, "calls whose halves are in different requests")
	require.Less(t, split, g.Calls()/2)
}

func TestGraphPoolRejectsBadShape(t *testing.T) {
	_, err := NewPool(Shape{Services: 1, Endpoints: 1, Databases: 1, DBEvery: 1, SplitEvery: 1}, 10, 1)
	require.Error(t, err)
	_, err = NewPool(Shape100k, 0, 1)
	require.Error(t, err)
}
