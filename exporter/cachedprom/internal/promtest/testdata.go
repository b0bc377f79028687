package promtest // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// MixedMetrics builds one of two consecutive batches covering every metric
// type and temporality the exporters handle, awkward names, label values
// that need escaping, three kinds of resource (job+instance, job only,
// neither) and a scope with attributes. Batch 1 continues batch 0's deltas.
func MixedMetrics(batch int, base time.Time) pmetric.Metrics {
	ts := func(i int) pcommon.Timestamp {
		return pcommon.NewTimestampFromTime(base.Add(time.Duration(i) * time.Second))
	}
	start, now := ts(batch), ts(batch+1)
	md := pmetric.NewMetrics()

	// Resource with job and instance: target_info, job, instance.
	rm := md.ResourceMetrics().AppendEmpty()
	ra := rm.Resource().Attributes()
	ra.PutStr("service.name", "checkout")
	ra.PutStr("service.namespace", "shop")
	ra.PutStr("service.instance.id", "checkout-1")
	ra.PutStr("host.name", "node \"7\"")
	ra.PutStr("k8s.pod.name", "checkout-abc")
	ra.PutInt("process.pid", 4242)
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("github.com/acme/lib")
	sm.Scope().SetVersion("1.2.3")
	sm.Scope().Attributes().PutStr("scope.tier", "gold")
	sm.SetSchemaUrl("https://opentelemetry.io/schemas/1.21.0")
	ms := sm.Metrics()

	g := ms.AppendEmpty()
	g.SetName("queue.size")
	g.SetUnit("{items}")
	g.SetDescription("Items \\ waiting\nin the queue")
	gg := g.SetEmptyGauge()
	for i, q := range []string{"orders", `quote"d`, "back\\slash", "new\nline", "ünï🙂"} {
		dp := gg.DataPoints().AppendEmpty()
		dp.Attributes().PutStr("queue", q)
		dp.Attributes().PutInt("shard", int64(i))
		dp.Attributes().PutBool("primary", i%2 == 0)
		dp.SetTimestamp(now)
		dp.SetIntValue(int64(10*i + batch))
	}

	mem := ms.AppendEmpty()
	mem.SetName("process.memory.usage")
	mem.SetUnit("By")
	mem.SetDescription("Resident memory.")
	dp := mem.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.Attributes().PutStr("memory.type", "heap")
	dp.Attributes().PutDouble("ratio", 0.25)
	dp.SetTimestamp(now)
	dp.SetDoubleValue(1.5e9 + float64(batch))

	untyped := ms.AppendEmpty()
	untyped.SetName("legacy_thing")
	untyped.Metadata().PutStr("prometheus.type", "unknown")
	dp = untyped.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(now)
	dp.SetDoubleValue(-3.25)

	cum := ms.AppendEmpty()
	cum.SetName("http.server.requests")
	cum.SetUnit("1")
	cum.SetDescription("Requests served.")
	cs := cum.SetEmptySum()
	cs.SetIsMonotonic(true)
	cs.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for i, code := range []string{"200", "500"} {
		dp := cs.DataPoints().AppendEmpty()
		dp.Attributes().PutStr("http.response.status_code", code)
		dp.SetStartTimestamp(ts(0))
		dp.SetTimestamp(now)
		dp.SetIntValue(int64(1_234_567*(i+1) + 100*batch))
		ex := dp.Exemplars().AppendEmpty()
		ex.SetTraceID(pcommon.TraceID([16]byte{1, 2, 3, byte(i)}))
		ex.SetTimestamp(now)
		ex.SetDoubleValue(0.5)
	}

	upDown := ms.AppendEmpty()
	upDown.SetName("db.client.connections")
	upDown.SetUnit("{connection}")
	us := upDown.SetEmptySum()
	us.SetIsMonotonic(false)
	us.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp = us.DataPoints().AppendEmpty()
	dp.SetTimestamp(now)
	dp.SetIntValue(int64(-2 + batch))

	delta := ms.AppendEmpty()
	delta.SetName("bytes.sent")
	delta.SetUnit("By")
	ds := delta.SetEmptySum()
	ds.SetIsMonotonic(true)
	ds.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	dp = ds.DataPoints().AppendEmpty()
	dp.Attributes().PutStr("peer", "a")
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(now)
	dp.SetDoubleValue(5.5 + float64(batch))

	refused := ms.AppendEmpty() // delta up-down counters are refused by both
	refused.SetName("delta.updown")
	rs := refused.SetEmptySum()
	rs.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	dp = rs.DataPoints().AppendEmpty()
	dp.SetTimestamp(now)
	dp.SetIntValue(3)

	h := ms.AppendEmpty()
	h.SetName("http.server.duration")
	h.SetUnit("ms")
	h.SetDescription("Duration of requests.")
	hh := h.SetEmptyHistogram()
	hh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for i, route := range []string{"/a", "/b"} {
		dp := hh.DataPoints().AppendEmpty()
		dp.Attributes().PutStr("http.route", route)
		dp.SetStartTimestamp(ts(0))
		dp.SetTimestamp(now)
		dp.ExplicitBounds().FromRaw([]float64{5, 10, 25, 50, 100, 1e6})
		counts := []uint64{1, 2, uint64(3 + batch), 4, 5, 6, uint64(7 + i)}
		var total uint64
		for _, c := range counts {
			total += c
		}
		dp.BucketCounts().FromRaw(counts)
		dp.SetCount(total)
		dp.SetSum(1234.5 + float64(i))
		ex := dp.Exemplars().AppendEmpty()
		ex.SetTraceID(pcommon.TraceID([16]byte{9, byte(i)}))
		ex.SetTimestamp(now)
		ex.SetDoubleValue(42)
	}

	odd := ms.AppendEmpty() // unsorted, duplicated bounds
	odd.SetName("odd.bounds")
	oh := odd.SetEmptyHistogram()
	oh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp2 := oh.DataPoints().AppendEmpty()
	dp2.SetTimestamp(now)
	dp2.ExplicitBounds().FromRaw([]float64{10, 5, 5, 20})
	dp2.BucketCounts().FromRaw([]uint64{1, 2, 3, 4, 5})
	dp2.SetCount(15)
	dp2.SetSum(99)

	dh := ms.AppendEmpty()
	dh.SetName("rpc.latency")
	dh.SetUnit("s")
	dhh := dh.SetEmptyHistogram()
	dhh.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	dp2 = dhh.DataPoints().AppendEmpty()
	dp2.SetStartTimestamp(start)
	dp2.SetTimestamp(now)
	dp2.ExplicitBounds().FromRaw([]float64{0.1, 0.5, 1})
	dp2.BucketCounts().FromRaw([]uint64{uint64(1 + batch), 2, 3, 4})
	dp2.SetCount(uint64(10 + batch))
	dp2.SetSum(4.25)

	eh := ms.AppendEmpty()
	eh.SetName("payload.size")
	eh.SetUnit("By")
	ehh := eh.SetEmptyExponentialHistogram()
	ehh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	edp := ehh.DataPoints().AppendEmpty()
	edp.SetTimestamp(now)
	edp.SetScale(2)
	edp.SetZeroCount(1)
	edp.Positive().SetOffset(3)
	edp.Positive().BucketCounts().FromRaw([]uint64{2, uint64(3 + batch), 4})
	edp.Negative().BucketCounts().FromRaw([]uint64{1})
	edp.SetCount(uint64(11 + batch))
	edp.SetSum(512.5)

	edh := ms.AppendEmpty()
	edh.SetName("exp.delta")
	edhh := edh.SetEmptyExponentialHistogram()
	edhh.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	edp = edhh.DataPoints().AppendEmpty()
	edp.SetStartTimestamp(start)
	edp.SetTimestamp(now)
	edp.SetScale(int32(3 - batch)) // merging downscales
	edp.Positive().SetOffset(int32(batch))
	edp.Positive().BucketCounts().FromRaw([]uint64{1, 2, 3})
	edp.SetCount(6)
	edp.SetSum(10)

	badExp := ms.AppendEmpty() // scale below -4: refused by both
	badExp.SetName("exp.bad")
	bdp := badExp.SetEmptyExponentialHistogram().DataPoints().AppendEmpty()
	badExp.ExponentialHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	bdp.SetTimestamp(now)
	bdp.SetScale(-6)
	bdp.SetCount(0)

	sum := ms.AppendEmpty()
	sum.SetName("gc.pause")
	sum.SetUnit("s")
	sdp := sum.SetEmptySummary().DataPoints().AppendEmpty()
	sdp.SetTimestamp(now)
	sdp.SetCount(uint64(100 + batch))
	sdp.SetSum(2.5)
	for _, q := range []float64{0.99, 0.5} {
		qv := sdp.QuantileValues().AppendEmpty()
		qv.SetQuantile(q)
		qv.SetValue(q / 10)
	}

	// Resource with a job but no instance: no target_info.
	rm2 := md.ResourceMetrics().AppendEmpty()
	rm2.Resource().Attributes().PutStr("service.name", "batch-job")
	sm2 := rm2.ScopeMetrics().AppendEmpty()
	sm2.Scope().SetName("other")
	m := sm2.Metrics().AppendEmpty()
	m.SetName("temperature.°C")
	m.SetUnit("Cel")
	dp = m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.Attributes().PutStr("sensor.id", "s1")
	dp.Attributes().PutStr("9lives", "cat")
	dp.SetTimestamp(now)
	dp.SetDoubleValue(21.5)

	// Resource without service attributes.
	rm3 := md.ResourceMetrics().AppendEmpty()
	rm3.Resource().Attributes().PutStr("cloud.region", "eu")
	m = rm3.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("anonymous_total")
	s := m.SetEmptySum()
	s.SetIsMonotonic(true)
	s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp = s.DataPoints().AppendEmpty()
	dp.SetTimestamp(now)
	dp.SetDoubleValue(7)
	return md
}

// recentCases builds one of two consecutive batches of the input whose
// handling the prometheus exporter changed after v0.145.0, for a resource of
// its own (MixedMetrics' output is pinned by golden files): a scope
// attribute named like a scope label, attribute names with runs of
// underscores or a leading one, a "no recorded value" point followed by
// others (batch 1), an explicit histogram with fewer counts than bounds,
// units the translator's UCUM gate maps differently, a cumulative
// exponential histogram with exemplars, and one without a sum.
func recentCases(batch int, base time.Time) pmetric.Metrics {
	ts := func(i int) pcommon.Timestamp {
		return pcommon.NewTimestampFromTime(base.Add(time.Duration(i) * time.Second))
	}
	now := ts(batch + 1)
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	ra := rm.Resource().Attributes()
	ra.PutStr("service.name", "inventory")
	ra.PutStr("service.instance.id", "inventory-1")
	ra.PutStr("host.name", "node-9")
	ra.PutStr("k8s.node.name", "node-9")
	ra.PutStr("k8s.pod.uid", "1f2e")
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("inventory/lib")
	sm.Scope().SetVersion("0.9")
	// Its label would be otel_scope_name, the scope's name: left off.
	sm.Scope().Attributes().PutStr("name", "shadow")
	sm.Scope().Attributes().PutStr("team", "stock")
	ms := sm.Metrics()

	g := ms.AppendEmpty()
	g.SetName("stock.level")
	gg := g.SetEmptyGauge()
	for i, item := range []string{"bolts", "nuts", "washers"} {
		dp := gg.DataPoints().AppendEmpty()
		dp.Attributes().PutStr("item", item)
		dp.Attributes().PutStr("net..peer", "p1") // runs of underscores are kept
		dp.Attributes().PutStr("_private", "yes")
		dp.SetTimestamp(now)
		dp.SetIntValue(int64(100*i + batch))
		if batch == 1 && i == 1 {
			// Deletes the series; the points after it still count.
			dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
		}
	}

	short := ms.AppendEmpty() // fewer counts than bounds: the missing ones are 0
	short.SetName("short.buckets")
	sh := short.SetEmptyHistogram()
	sh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	hdp := sh.DataPoints().AppendEmpty()
	hdp.SetStartTimestamp(ts(0))
	hdp.SetTimestamp(now)
	hdp.ExplicitBounds().FromRaw([]float64{1, 2, 3})
	hdp.BucketCounts().FromRaw([]uint64{4, uint64(5 + batch)})
	hdp.SetCount(uint64(9 + batch))
	hdp.SetSum(12)

	for _, unit := range []string{"kBy/min", "TiBy", "By/wk", "1/a"} {
		m := ms.AppendEmpty()
		m.SetName("transfer." + unit)
		m.SetUnit(unit)
		dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
		dp.SetTimestamp(now)
		dp.SetDoubleValue(3)
	}

	eh := ms.AppendEmpty()
	eh.SetName("request.size")
	eh.SetUnit("By")
	edp := eh.SetEmptyExponentialHistogram().DataPoints().AppendEmpty()
	eh.ExponentialHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	edp.SetStartTimestamp(ts(0))
	edp.SetTimestamp(now)
	edp.SetScale(1)
	edp.Positive().SetOffset(-2)
	edp.Positive().BucketCounts().FromRaw([]uint64{1, 0, uint64(2 + batch)})
	edp.SetCount(uint64(3 + batch))
	edp.SetSum(9.5)
	for i := range 2 {
		ex := edp.Exemplars().AppendEmpty()
		ex.SetDoubleValue(float64(10*batch + i))
		ex.SetTimestamp(ts(batch + i))
		ex.SetTraceID(pcommon.TraceID([16]byte{7, byte(batch), byte(i)}))
		if i == 0 {
			ex.SetSpanID(pcommon.SpanID([8]byte{7, byte(batch)}))
		}
	}

	noSum := ms.AppendEmpty() // without a sum: refused by both
	noSum.SetName("exp.nosum")
	nsh := noSum.SetEmptyExponentialHistogram()
	nsh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	edp = nsh.DataPoints().AppendEmpty()
	edp.SetTimestamp(now)
	edp.Positive().BucketCounts().FromRaw([]uint64{1, 2})
	edp.SetCount(3)
	return md
}

// WithRecentCases appends recentCases' resource to MixedMetrics' batch.
func WithRecentCases(batch int, base time.Time) pmetric.Metrics {
	md := MixedMetrics(batch, base)
	recentCases(batch, base).ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())
	return md
}
