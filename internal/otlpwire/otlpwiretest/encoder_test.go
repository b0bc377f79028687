package otlpwiretest

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// What Ascending writes, pdata reads back as the traces it encoded: every field, every value
// type, nested values, events and links.
func TestAscendingReadsBackAsPdata(t *testing.T) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.SetSchemaUrl("https://schema/1")
	rs.Resource().Attributes().PutStr("service.name", "svc")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("lib")
	ss.Scope().SetVersion("1.0")
	ss.Scope().Attributes().PutBool("scope.bool", true)
	sp := ss.Spans().AppendEmpty()
	sp.SetName("op")
	sp.SetKind(ptrace.SpanKindClient)
	sp.SetTraceID(pcommon.TraceID{1, 2, 3})
	sp.SetSpanID(pcommon.SpanID{4})
	sp.SetParentSpanID(pcommon.SpanID{5})
	sp.TraceState().FromRaw("ot=th:8")
	sp.SetStartTimestamp(10)
	sp.SetEndTimestamp(20)
	sp.SetFlags(0x301)
	sp.SetDroppedAttributesCount(1)
	sp.Status().SetCode(ptrace.StatusCodeError)
	sp.Status().SetMessage("boom")
	a := sp.Attributes()
	a.PutStr("s", "x")
	a.PutInt("i", math.MinInt64)
	a.PutDouble("d", -0.5)
	a.PutBool("b", false)
	a.PutEmptyBytes("y").FromRaw([]byte{0, 255})
	a.PutEmpty("e")
	m := a.PutEmptyMap("m")
	m.PutStr("k", "v")
	m.PutEmptySlice("l").AppendEmpty().SetInt(1)
	ev := sp.Events().AppendEmpty()
	ev.SetName("exception")
	ev.SetTimestamp(15)
	ev.Attributes().PutStr("exception.type", "E")
	l := sp.Links().AppendEmpty()
	l.SetTraceID(pcommon.TraceID{9})
	l.SetSpanID(pcommon.SpanID{8})
	l.SetFlags(1)
	l.Attributes().PutInt("n", 3)
	for name, enc := range map[string]func(ptrace.Traces) []byte{"Ascending": Ascending, "AscendingWithZeros": AscendingWithZeros, "AscendingWithUnknownFields": AscendingWithUnknownFields} {
		req := ptraceotlp.NewExportRequest()
		require.NoError(t, req.UnmarshalProto(enc(td)), name)
		require.Equal(t, td, req.Traces(), name)
	}
}
