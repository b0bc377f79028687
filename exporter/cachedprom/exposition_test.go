package cachedprom

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"
)

// awkwardBatch holds, in one batch, everything that used to be refused or
// to produce duplicate samples: labels equal after sanitizing, invalid
// UTF-8, a const label named job, a gauge x_count beside a histogram x,
// metrics named target_info, and attributes differing only in type.
func awkwardBatch(end time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "svc")
	rm.Resource().Attributes().PutStr("service.instance.id", "i1")
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	ts := pcommon.NewTimestampFromTime(end)

	g := ms.AppendEmpty()
	g.SetName("x_count")
	dp := g.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.Attributes().PutStr("http.method", "GET")
	dp.Attributes().PutStr("http_method", "get")
	dp.Attributes().PutStr("bad", "\xff")
	dp.SetTimestamp(ts)
	dp.SetDoubleValue(1)

	for _, name := range []string{"target_info", "target.info"} {
		ti := ms.AppendEmpty()
		ti.SetName(name)
		tdp := ti.SetEmptyGauge().DataPoints().AppendEmpty()
		tdp.SetTimestamp(ts)
		tdp.SetDoubleValue(2)
	}

	h := ms.AppendEmpty()
	h.SetName("x")
	hh := h.SetEmptyHistogram()
	hh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	hp := hh.DataPoints().AppendEmpty()
	hp.Attributes().PutStr("http.method", "GET")
	hp.SetTimestamp(ts)
	hp.ExplicitBounds().FromRaw([]float64{1})
	hp.BucketCounts().FromRaw([]uint64{1, 1})
	hp.SetCount(2)

	c := ms.AppendEmpty()
	c.SetName("requests")
	cs := c.SetEmptySum()
	cs.SetIsMonotonic(true)
	cs.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for _, typed := range []func(pcommon.Map){
		func(m pcommon.Map) { m.PutInt("code", 200) },
		func(m pcommon.Map) { m.PutStr("code", "200") },
		func(m pcommon.Map) { m.PutDouble("code", 200) },
	} {
		cp := cs.DataPoints().AppendEmpty()
		typed(cp.Attributes())
		cp.SetTimestamp(ts)
		cp.SetIntValue(3)
	}
	return md
}

// TestExpositionAlwaysParses renders the awkward batch under every
// configuration variant and checks both formats with Prometheus' parsers.
func TestExpositionAlwaysParses(t *testing.T) {
	for _, v := range configVariants {
		t.Run(v.name, func(t *testing.T) {
			v.setGates(t)
			e, _ := startOurs(t, func(c *Config) {
				if v.ours != nil {
					v.ours(c)
				}
				c.EnableOpenMetrics = true
				c.ConstLabels = map[string]string{"job": "from-config"}
				c.RenderInterval = time.Hour
			})
			require.NoError(t, e.ConsumeMetrics(context.Background(), awkwardBatch(promtest.TestBase)))
			require.NoError(t, e.ConsumeMetrics(context.Background(), awkwardBatch(promtest.TestBase.Add(time.Second))))
			e.renderNow()
			snap := hold(t, e)
			promtest.CheckExposition(t, []byte(textOf(t, snap)), false)
			om := promtest.Gunzip(t, snap.Body(render.BodyOpenMetrics).Gzip)
			promtest.CheckExposition(t, om, true)
		})
	}
}
