package tracemetrics

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// A dimension value's identity is its string form, as in spanmetrics: an int, a double or a
// bool and the string that spells it are one series (issue: 200 and "200" were two), and the
// series keeps the type of the first span's value in its attributes.
func TestValuesWithOneStringFormShareASeries(t *testing.T) {
	c, sink, clock, _ := startOurs(t, map[string]any{
		"aggregation_temporality": delta,
		"dimensions":              dims("http.response.status_code"),
	}, true)
	for _, tc := range []struct {
		first, second func(pcommon.Map)
		want          string
	}{
		{func(m pcommon.Map) { m.PutInt("k", 200) }, func(m pcommon.Map) { m.PutStr("k", "200") }, "Int:\"200\""},
		{func(m pcommon.Map) { m.PutStr("k", "200") }, func(m pcommon.Map) { m.PutInt("k", 200) }, "Str:\"200\""},
		{func(m pcommon.Map) { m.PutDouble("k", 1e21) }, func(m pcommon.Map) { m.PutStr("k", "1e+21") }, "Double:\"1e+21\""},
		{func(m pcommon.Map) { m.PutDouble("k", -2.5e-7) }, func(m pcommon.Map) { m.PutStr("k", "-2.5e-7") }, "Double:\"-2.5e-7\""},
		{func(m pcommon.Map) { m.PutDouble("k", 0.1) }, func(m pcommon.Map) { m.PutStr("k", "0.1") }, "Double:\"0.1\""},
		{func(m pcommon.Map) { m.PutBool("k", true) }, func(m pcommon.Map) { m.PutStr("k", "true") }, "Bool:\"true\""},
		{func(m pcommon.Map) { m.PutEmpty("k") }, func(m pcommon.Map) { m.PutStr("k", "") }, "Empty:\"\""},
	} {
		// A new span name per case: each case is a new series.
		name := "op-" + tc.want
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr(series.ServiceNameKey, "svc")
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		for i := 0; i < 5; i++ {
			sp := spans.AppendEmpty()
			sp.SetName(name)
			put := tc.first
			if i >= 3 {
				put = tc.second
			}
			m := pcommon.NewMap()
			put(m)
			v, _ := m.Get("k")
			v.CopyTo(sp.Attributes().PutEmpty("http.response.status_code"))
		}
		require.NoError(t, c.ConsumeTraces(context.Background(), td))
		md := flushOnce(t, c, sink, clock, time.Minute)
		tot := sumUp(md)
		require.Equal(t, 1, tot.nSeries, "want one series for %s", tc.want)
		require.EqualValues(t, 5, tot.calls)
		dp := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Sum().DataPoints().At(0)
		require.Contains(t, attrString(dp.Attributes()), "http.response.status_code="+tc.want)
	}
}
