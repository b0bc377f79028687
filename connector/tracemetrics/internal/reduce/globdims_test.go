package reduce

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/dimglob"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview/traceviewtest"
)

// A series key of a family with named and glob dimensions decodes back to the attributes it
// was built from, with more named dimensions than appendKey keeps type tags for on its stack,
// glob values of every type, and none; the identity leaves out the types and the trailing
// count, so values with one string form share it. From either source.
func TestGlobKeysRoundTrip(t *testing.T) {
	t.Run("pdata", testGlobKeysRoundTrip[traceview.Pdata])
	t.Run("wire", testGlobKeysRoundTrip[traceview.Wire])
}

func testGlobKeysRoundTrip[S traceview.Source](t *testing.T) {
	// The layout of `dimensions: [d00 … d17, {glob: g.*}]` with spanmetrics' built-ins.
	f := &series.Family{Calls: true, Duration: true}
	skip := []string{series.ServiceNameKey, series.SpanNameKey, series.SpanKindKey, series.StatusCodeKey}
	for i := range 18 {
		f.Dims = append(f.Dims, series.Dimension{Name: fmt.Sprintf("d%02d", i)})
		skip = append(skip, f.Dims[i].Name)
	}
	set, err := dimglob.NewSet([]string{"g.*"}, skip)
	require.NoError(t, err)
	f.Globs = dimglob.NewAnswers(set)
	l := series.Layout{WithService: true, WithName: true, WithKind: true, WithStatus: true,
		Families: []*series.Family{f}, CallsFamily: 0, DurationFamily: 0, EventsFamily: -1}
	var sc producerScratch
	scratch := &sc.globs
	res := pcommon.NewMap()
	res.PutStr("g.res", "r")
	resAttrs := traceviewtest.Attrs[S](t, res)
	setResourceGlobs(scratch, l.Families, resAttrs, &sc.enc)
	setResourceDims(l.Families, &sc, resAttrs)
	keyOf := func(attrs map[string]any) ([]byte, pcommon.Map) {
		m := pcommon.NewMap()
		require.NoError(t, m.FromRaw(attrs))
		spanAttrs := traceviewtest.Attrs[S](t, m)
		globs := collectGlobs(scratch, f, spanAttrs, nil, &sc.enc)
		dims := series.Dims[S]{Span: spanAttrs, Resource: sc.resDims[f.Index], Enc: &sc.enc}
		key := series.AppendKey(&l, nil, f, &series.KeyHead{ResHash: 1, Service: "svc", Name: "op"}, &dims, globs)
		out := pcommon.NewMap()
		l.PutAttributes(key, out, nil)
		return key, out
	}
	attrs := map[string]any{"g.int": int64(7), "g.double": 0.5, "g.bool": true, "g.bytes": []byte{1, 2},
		"g.map": map[string]any{"a": "b"}, "g.slice": []any{"x", int64(1)}, "g.str": "s", "other": "not matched"}
	for i := range 18 {
		if i%3 != 0 {
			attrs[fmt.Sprintf("d%02d", i)] = int64(i)
		}
	}
	_, got := keyOf(attrs)
	want := pcommon.NewMap()
	require.NoError(t, want.FromRaw(attrs))
	want.Remove("other")
	want.PutStr("g.res", "r")
	want.PutStr(series.ServiceNameKey, "svc")
	want.PutStr(series.SpanNameKey, "op")
	want.PutStr(series.SpanKindKey, "SPAN_KIND_UNSPECIFIED")
	want.PutStr(series.StatusCodeKey, "STATUS_CODE_UNSET")
	require.Equal(t, want.AsRaw(), got.AsRaw())

	k1, _ := keyOf(map[string]any{"d17": int64(5), "g.x": int64(200)})
	k2, got2 := keyOf(map[string]any{"d17": "5", "g.x": "200"})
	require.Equal(t, series.Identity(k1, f), series.Identity(k2, f), "one string form, one series")
	v, _ := got2.Get("g.x")
	require.Equal(t, pcommon.ValueTypeStr, v.Type())
	k3, _ := keyOf(map[string]any{"d17": int64(5), "g.y": int64(200)})
	require.NotEqual(t, series.Identity(k1, f), series.Identity(k3, f), "another key, another series")

	setResourceGlobs(scratch, l.Families, traceviewtest.Attrs[S](t, pcommon.NewMap()), &sc.enc)
	_, none := keyOf(map[string]any{})
	require.Equal(t, 4, none.Len(), "no dimension, no glob match: the built-ins alone")
	require.Zero(t, f.Globs.Len())
	scratch.release(l.Families)
	for _, m := range scratch.cur[:cap(scratch.cur)] {
		require.Empty(t, m.Key, "released: nothing of the request is kept")
	}
	require.Positive(t, f.Globs.Len(), "the keys seen are known to every producer")
	require.Empty(t, scratch.learn[f.Index])
}
