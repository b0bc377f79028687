// Package traceviewtest builds traceview cursors for tests, from either source: the pdata
// given, or the bytes of a request holding it, decoded by internal/otlpwire.
package traceviewtest // import "github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview/traceviewtest"

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
)

// Request returns td read from source S: td itself for Pdata; for Wire, td marshalled by pdata
// and decoded by a decoder of its own.
func Request[S traceview.Source](t testing.TB, td ptrace.Traces) traceview.Request[S] {
	t.Helper()
	if !traceview.IsWire[S]() {
		return any(traceview.FromPdata(td)).(traceview.Request[S])
	}
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	d := new(otlpwire.Decoder)
	require.NoError(t, d.Decode(b))
	return any(traceview.FromWire(d)).(traceview.Request[S])
}

// Span returns a cursor on sp (a copy, in a request of its own), read from source S.
func Span[S traceview.Source](t testing.TB, sp ptrace.Span) *traceview.Span[S] {
	t.Helper()
	td := ptrace.NewTraces()
	sp.CopyTo(td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty())
	var rs traceview.Resource[S]
	var sc traceview.Scope[S]
	out := new(traceview.Span[S])
	Request[S](t, td).ReadResource(0, &rs)
	rs.ReadScope(0, &sc)
	sc.ReadSpan(0, out)
	return out
}

// Attrs returns m (a copy, as a resource's attributes) read from source S.
func Attrs[S traceview.Source](t testing.TB, m pcommon.Map) traceview.Attrs[S] {
	t.Helper()
	td := ptrace.NewTraces()
	m.CopyTo(td.ResourceSpans().AppendEmpty().Resource().Attributes())
	rs := new(traceview.Resource[S])
	Request[S](t, td).ReadResource(0, rs)
	return rs.Attributes()
}
