package traceview_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
	"github.com/otelcol-red/otelcol-red/internal/otlpwire/otlpwiretest"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
)

// randValue sets v to a random value of any type, maps and slices nested up to depth.
func randValue(rnd *rand.Rand, v pcommon.Value, depth int) {
	n := 8
	if depth == 0 {
		n = 6
	}
	switch rnd.IntN(n) {
	case 0:
		v.SetStr(strings.Repeat("s", rnd.IntN(4)))
	case 1:
		v.SetInt(rnd.Int64() - math.MaxInt64/2)
	case 2:
		doubles := []float64{0, -0.5, 1e21, 1e-7, 123.25, math.NaN(), math.Inf(1), math.Inf(-1)}
		v.SetDouble(doubles[rnd.IntN(len(doubles))])
	case 3:
		v.SetBool(rnd.IntN(2) == 0)
	case 4:
		v.SetEmptyBytes().FromRaw([]byte(strings.Repeat("\x00b", rnd.IntN(3))))
	case 5:
		// empty
	case 6:
		m := v.SetEmptyMap()
		for i := range rnd.IntN(4) {
			randValue(rnd, m.PutEmpty(string(rune('a'+i))), depth-1)
		}
	case 7:
		s := v.SetEmptySlice()
		for range rnd.IntN(4) {
			randValue(rnd, s.AppendEmpty(), depth-1)
		}
	}
}

// randTraces returns a request of random spans: every field traceview reads, attributes of
// every type, nested, events, links.
func randTraces(rnd *rand.Rand) ptrace.Traces {
	td := ptrace.NewTraces()
	for range 1 + rnd.IntN(2) {
		rs := td.ResourceSpans().AppendEmpty()
		for i := range rnd.IntN(4) {
			randValue(rnd, rs.Resource().Attributes().PutEmpty("r"+string(rune('a'+i))), 2)
		}
		for range 1 + rnd.IntN(2) {
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName(strings.Repeat("n", rnd.IntN(2)))
			ss.Scope().SetVersion(strings.Repeat("v", rnd.IntN(2)))
			for range rnd.IntN(4) {
				sp := ss.Spans().AppendEmpty()
				sp.SetName(strings.Repeat("op", rnd.IntN(3)))
				sp.SetKind(ptrace.SpanKind(rnd.IntN(7)))
				sp.Status().SetCode(ptrace.StatusCode(rnd.IntN(4)))
				if rnd.IntN(2) == 0 {
					sp.Status().SetMessage(strings.Repeat("m", 1+rnd.IntN(3)))
				}
				sp.SetStartTimestamp(pcommon.Timestamp(rnd.Uint64()))
				sp.SetEndTimestamp(pcommon.Timestamp(rnd.Uint64()))
				if rnd.IntN(2) == 0 {
					sp.SetTraceID(pcommon.TraceID{byte(rnd.Uint32()), 1})
					sp.SetSpanID(pcommon.SpanID{byte(rnd.Uint32()), 2})
					sp.SetParentSpanID(pcommon.SpanID{byte(rnd.Uint32()), 3})
				}
				if rnd.IntN(2) == 0 {
					sp.TraceState().FromRaw("ot=th:8")
				}
				for i := range rnd.IntN(5) {
					randValue(rnd, sp.Attributes().PutEmpty("s"+string(rune('a'+i))), 3)
				}
				for range rnd.IntN(3) {
					ev := sp.Events().AppendEmpty()
					randValue(rnd, ev.Attributes().PutEmpty("e"), 1)
				}
				for range rnd.IntN(3) {
					l := sp.Links().AppendEmpty()
					if rnd.IntN(4) != 0 {
						l.SetTraceID(pcommon.TraceID{byte(rnd.Uint32()), 4})
						l.SetSpanID(pcommon.SpanID{byte(rnd.Uint32()), 5})
					}
					randValue(rnd, l.Attributes().PutEmpty("l"), 1)
				}
			}
		}
	}
	return td
}

// readAll reads every field and attribute of req as the connectors do, into a record.
func readAll[S traceview.Source](req traceview.Request[S]) string {
	var out strings.Builder
	var rs traceview.Resource[S]
	var sc traceview.Scope[S]
	var sp traceview.Span[S]
	var ev traceview.Event[S]
	var enc []byte
	attrs := func(a traceview.Attrs[S]) {
		out.WriteString("attrs ")
		out.Write(appendInt(nil, a.Len()))
		for k, v := range a.All() {
			out.WriteString(" " + k + "=")
			enc = enc[:0]
			out.Write(traceview.AppendTagged(nil, v.Val(&enc)))
			out.WriteString(" as ")
			out.Write(v.AppendString(nil))
			got, ok := a.GetVal(k, &enc)
			first, _ := a.Get(k)
			if !ok || string(traceview.AppendTagged(nil, got)) != string(traceview.AppendTagged(nil, first.Val(&enc))) {
				panic("BUG: GetVal differs from Get then Val")
			}
			// typeless reads: the type alone for bytes, maps and slices
			out.WriteString(" t" + string(rune('0'+v.Val(nil).Type())))
		}
		out.WriteString("\n")
	}
	out.Write(appendInt(nil, req.NumSpans()))
	for i := range req.NumResources() {
		req.ReadResource(i, &rs)
		attrs(rs.Attributes())
		for j := range rs.NumScopes() {
			rs.ReadScope(j, &sc)
			out.WriteString("scope " + sc.Name + " " + sc.Version + "\n")
			for k := range sc.NumSpans() {
				sc.ReadSpan(k, &sp)
				out.WriteString("span " + sp.Name() + " " + sp.Kind().String() + " " + sp.StatusCode().String() + " " + sp.StatusMessage() + " ")
				out.Write(appendInt(nil, int(sp.StartTimestamp()>>1)))
				out.Write(appendInt(nil, int(sp.EndTimestamp()>>1)))
				tid, sid, pid := sp.TraceID(), sp.SpanID(), sp.ParentSpanID()
				out.WriteString(" " + tid.String() + " " + sid.String() + " " + pid.String() + " " + sp.TraceState() + "\n")
				attrs(sp.Attributes())
				for l := range sp.NumEvents() {
					sp.ReadEvent(l, &ev)
					attrs(ev.Attributes())
				}
				out.WriteString("links ")
				out.Write(appendInt(nil, sp.NumLinks()))
				for l := range sp.NumLinks() {
					ltid, lsid := sp.LinkIDs(l)
					out.WriteString(" " + ltid.String() + "/" + lsid.String())
				}
				out.WriteString("\n")
			}
		}
	}
	return out.String()
}

func appendInt(dst []byte, i int) []byte {
	return append(dst, []byte(pcommon.NewValueInt(int64(i)).AsString())...)
}

// Every field, attribute, value, tagged encoding and string form read through traceview is
// the same from pdata and from the wire, whichever field order the bytes have (pdata's
// marshaler writes descending, otlpwiretest ascending); the string forms are pdata's AsString.
func TestSameFromBothSources(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	var d otlpwire.Decoder
	for i := range 300 {
		td := randTraces(rnd)
		want := readAll(traceview.FromPdata(td))
		desc, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		require.NoError(t, err)
		for name, req := range map[string][]byte{"pdata order": desc, "ascending": otlpwiretest.Ascending(td)} {
			require.NoError(t, d.Decode(req), "request %d, %s", i, name)
			require.Equal(t, want, readAll(traceview.FromWire(&d)), "request %d, %s", i, name)
		}
	}
}

// AppendString renders every value as pcommon.Value.AsString does, from either source.
func TestAppendStringIsAsString(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	var d otlpwire.Decoder
	for range 500 {
		td := ptrace.NewTraces()
		m := td.ResourceSpans().AppendEmpty().Resource().Attributes()
		randValue(rnd, m.PutEmpty("k"), 3)
		want, _ := m.Get("k")
		b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		require.NoError(t, err)
		require.NoError(t, d.Decode(b))
		var prs traceview.Resource[traceview.Pdata]
		var wrs traceview.Resource[traceview.Wire]
		traceview.FromPdata(td).ReadResource(0, &prs)
		traceview.FromWire(&d).ReadResource(0, &wrs)
		got, ok := prs.Attributes().AppendString(nil, "k")
		require.True(t, ok)
		require.Equal(t, want.AsString(), string(got))
		got, ok = wrs.Attributes().AppendString(nil, "k")
		require.True(t, ok)
		require.Equal(t, want.AsString(), string(got))
		_, ok = wrs.Attributes().AppendString(nil, "absent")
		require.False(t, ok)
	}
	for _, f := range []float64{0, 1, -1.5, 1e20, 1e21, 1e-6, 1e-7, -1e-9, math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1)} {
		require.Equal(t, pcommon.NewValueDouble(f).AsString(), string(otlpwire.AppendFloatString(nil, f)), "%g", f)
	}
}

// The scalar constructors and accessors: a Val answers the zero value for another type, as
// pcommon.Value does.
func TestValAccessors(t *testing.T) {
	require.Equal(t, "x", traceview.StrVal("x").Str())
	require.Equal(t, int64(-3), traceview.IntVal(-3).Int())
	require.Equal(t, -0.25, traceview.DoubleVal(-0.25).Double())
	require.True(t, traceview.BoolVal(true).Bool())
	require.False(t, traceview.BoolVal(false).Bool())
	require.Empty(t, traceview.IntVal(1).Str())
	require.Zero(t, traceview.StrVal("1").Int())
	require.Zero(t, traceview.StrVal("1").Double())
	require.False(t, traceview.IntVal(1).Bool())
	require.Empty(t, traceview.StrVal("x").Tagged())
	require.Equal(t, pcommon.ValueTypeEmpty, traceview.Val{}.Type())
	require.Panics(t, func() { traceview.AppendTagged(nil, bytesWithoutBuffer()) })
}

// bytesWithoutBuffer is a bytes value read without a buffer: its type alone.
func bytesWithoutBuffer() traceview.Val {
	td := ptrace.NewTraces()
	td.ResourceSpans().AppendEmpty().Resource().Attributes().PutEmptyBytes("b").FromRaw([]byte{1})
	var rs traceview.Resource[traceview.Pdata]
	traceview.FromPdata(td).ReadResource(0, &rs)
	v, _ := rs.Attributes().GetVal("b", nil)
	return v
}
