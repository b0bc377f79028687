package series

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview/traceviewtest"
)

// A span counted apart (late_spans: separate) has a series of its own: the key of its on-time
// twin but for the late bit, a different identity, the same attributes plus late="true"; over a
// cap it goes to the same overflow series as its twin.
func TestLateKey(t *testing.T) {
	f := &Family{Index: 1, Calls: true, Dims: []Dimension{{Name: "http.method"}}}
	l := &Layout{WithService: true, WithName: true, WithKind: true, WithStatus: true,
		Families: []*Family{{Index: 0}, f}}
	attrs := pcommon.NewMap()
	attrs.PutStr("http.method", "GET")
	dims := Dims[traceview.Pdata]{Span: traceviewtest.Attrs[traceview.Pdata](t, attrs), Resource: make([]DimValue, 1), Enc: new([]byte)}
	h := KeyHead{ResHash: 7, Service: "svc", Name: "op", Kind: ptrace.SpanKindServer}
	onTime := AppendKey(l, nil, f, &h, &dims, nil)
	h.Late = true
	late := AppendKey(l, nil, f, &h, &dims, nil)

	require.False(t, IsLateKey(onTime))
	require.True(t, IsLateKey(late))
	require.False(t, IsOverflowKey(late))
	require.NotEqual(t, Identity(onTime, f), Identity(late, f))
	require.Equal(t, onTime[KeyHeaderLen:], late[KeyHeaderLen:], "only the family byte differs")

	put := func(key []byte) map[string]any {
		m := pcommon.NewMap()
		l.PutAttributes(key, m, nil)
		return m.AsRaw()
	}
	want := put(onTime)
	require.NotContains(t, want, LateKey)
	want[LateKey] = "true"
	require.Equal(t, want, put(late))

	require.Equal(t, l.AppendCapOverflowKey(nil, onTime), l.AppendCapOverflowKey(nil, late))
}
