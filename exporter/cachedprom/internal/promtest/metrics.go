// Package promtest is what the tests of cachedprom's packages share: builders
// of the OTLP metrics they feed, parsers and checks of the expositions they
// get back, and the contrib prometheus exporter to compare with. Only tests
// import it.
package promtest // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// TestBase is the fixed start of test timestamps.
var TestBase = time.Unix(1_700_000_000, 0)

// NHStart and NHTS are the start and the timestamp of an ExpPoint.
var (
	NHStart = time.Unix(1_700_000_000, 250_000_000).UTC()
	NHTS    = NHStart.Add(time.Minute)
)

// ExpPoint describes an exponential histogram point compactly.
type ExpPoint struct {
	Scale         int32
	ZeroCount     uint64
	ZeroThreshold float64
	PosOffset     int32
	Pos           []uint64
	NegOffset     int32
	Neg           []uint64
	Sum           float64
	NoSum         bool
	ExtraCount    uint64 // count above the population (NaN sums allow it)
	Exemplars     []ExpExemplar
}

// ExpExemplar is one exemplar of an ExpPoint.
type ExpExemplar struct {
	Value   float64
	TS      time.Time
	TraceID pcommon.TraceID
	SpanID  pcommon.SpanID
}

// Build returns the point, started at NHStart, at NHTS, its count the sum
// of its zero count, bucket counts and ExtraCount.
func (p ExpPoint) Build() pmetric.ExponentialHistogramDataPoint {
	dp := pmetric.NewExponentialHistogramDataPoint()
	dp.SetScale(p.Scale)
	dp.SetZeroCount(p.ZeroCount)
	dp.SetZeroThreshold(p.ZeroThreshold)
	dp.Positive().SetOffset(p.PosOffset)
	dp.Positive().BucketCounts().FromRaw(p.Pos)
	dp.Negative().SetOffset(p.NegOffset)
	dp.Negative().BucketCounts().FromRaw(p.Neg)
	count := p.ZeroCount + p.ExtraCount
	for _, c := range p.Pos {
		count += c
	}
	for _, c := range p.Neg {
		count += c
	}
	dp.SetCount(count)
	if !p.NoSum {
		dp.SetSum(p.Sum)
	}
	dp.SetStartTimestamp(pcommon.NewTimestampFromTime(NHStart))
	dp.SetTimestamp(pcommon.NewTimestampFromTime(NHTS))
	for _, x := range p.Exemplars {
		e := dp.Exemplars().AppendEmpty()
		e.SetDoubleValue(x.Value)
		if !x.TS.IsZero() {
			e.SetTimestamp(pcommon.NewTimestampFromTime(x.TS))
		}
		e.SetTraceID(x.TraceID)
		e.SetSpanID(x.SpanID)
	}
	return dp
}

// ExpBatch wraps exponential histogram points of one series in a metric of
// the given temporality; point i covers [start+i min, start+(i+1) min).
func ExpBatch(delta bool, first int, points ...pmetric.ExponentialHistogramDataPoint) pmetric.Metrics {
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("latency")
	h := m.SetEmptyExponentialHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	if delta {
		h.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	}
	for i, p := range points {
		dp := h.DataPoints().AppendEmpty()
		p.CopyTo(dp)
		start := NHStart.Add(time.Duration(first+i) * time.Minute)
		if !delta {
			start = NHStart
		}
		dp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		dp.SetTimestamp(pcommon.NewTimestampFromTime(NHStart.Add(time.Duration(first+i+1) * time.Minute)))
	}
	return md
}

// GaugeBatch builds one gauge metric with a data point per label value.
func GaugeBatch(name string, ts time.Time, values ...string) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "svc")
	rm.Resource().Attributes().PutStr("service.instance.id", "i-1")
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName(name)
	g := m.SetEmptyGauge()
	for i, v := range values {
		dp := g.DataPoints().AppendEmpty()
		dp.Attributes().PutStr("k", v)
		dp.SetTimestamp(pcommon.NewTimestampFromTime(ts))
		dp.SetDoubleValue(float64(i + 1))
	}
	return md
}

// BenchSeries is the series counts benchmarks run at: CACHEDPROM_BENCH_SERIES
// (comma separated), 10000 by default.
func BenchSeries(b *testing.B) []int {
	spec := os.Getenv("CACHEDPROM_BENCH_SERIES")
	if spec == "" {
		spec = "10000"
	}
	var out []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		require.NoError(b, err)
		out = append(out, n)
	}
	return out
}

// SpanmetricsBounds are the spanmetrics connector's default duration buckets
// in milliseconds.
var SpanmetricsBounds = []float64{2, 4, 6, 8, 10, 50, 100, 200, 400, 800, 1000, 1400, 2000, 5000, 10000, 15000}

// SpanmetricsLike builds what the spanmetrics connector emits for n OTLP
// series: n/2 (service, span, kind, status) keys, each with a calls counter
// and a duration histogram, spread over 50 services. step shifts values and
// timestamps so successive batches are newer cumulative points.
func SpanmetricsLike(n int, step int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	keys := n / 2
	services := 50
	now := pcommon.NewTimestampFromTime(time.Unix(1_700_000_000+int64(step), 0))
	startTS := pcommon.NewTimestampFromTime(time.Unix(1_699_999_000, 0))
	for s := 0; s < services; s++ {
		svc, cs, dh := RedService(md, s, "spanmetricsconnector", pmetric.AggregationTemporalityCumulative)
		for k := s; k < keys; k += services {
			span := "GET /api/v1/resource/" + strconv.Itoa(k/4)
			kind := [...]string{"SPAN_KIND_SERVER", "SPAN_KIND_CLIENT"}[k%2]
			status := [...]string{"STATUS_CODE_UNSET", "STATUS_CODE_ERROR"}[(k/2)%2]
			dp := cs.DataPoints().AppendEmpty()
			for _, a := range []pcommon.Map{dp.Attributes()} {
				a.PutStr("service.name", svc)
				a.PutStr("span.name", span)
				a.PutStr("span.kind", kind)
				a.PutStr("status.code", status)
			}
			dp.SetStartTimestamp(startTS)
			dp.SetTimestamp(now)
			dp.SetIntValue(int64(1000 + k + step))

			hp := dh.DataPoints().AppendEmpty()
			dp.Attributes().CopyTo(hp.Attributes())
			hp.SetStartTimestamp(startTS)
			hp.SetTimestamp(now)
			hp.ExplicitBounds().FromRaw(SpanmetricsBounds)
			counts := make([]uint64, len(SpanmetricsBounds)+1)
			var total uint64
			for i := range counts {
				counts[i] = uint64((k+i+step)%13) * 7
				total += counts[i]
			}
			hp.BucketCounts().FromRaw(counts)
			hp.SetCount(total)
			hp.SetSum(float64(total) * 12.5)
		}
	}
	return md
}

// RedService appends service s's resource and scope with empty calls and
// duration metrics of the given temporality.
func RedService(md pmetric.Metrics, s int, scope string, temporality pmetric.AggregationTemporality) (string, pmetric.Sum, pmetric.Histogram) {
	rm := md.ResourceMetrics().AppendEmpty()
	svc := "service-" + strconv.Itoa(s)
	rm.Resource().Attributes().PutStr("service.name", svc)
	rm.Resource().Attributes().PutStr("service.instance.id", "instance-"+strconv.Itoa(s))
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(scope)
	calls := sm.Metrics().AppendEmpty()
	calls.SetName("traces.span.metrics.calls")
	cs := calls.SetEmptySum()
	cs.SetIsMonotonic(true)
	cs.SetAggregationTemporality(temporality)
	dur := sm.Metrics().AppendEmpty()
	dur.SetName("traces.span.metrics.duration")
	dur.SetUnit("ms")
	dh := dur.SetEmptyHistogram()
	dh.SetAggregationTemporality(temporality)
	return svc, cs, dh
}

// RedDeltaBatch is tracemetrics-shaped delta output for RED series
// [from, to): a calls counter and a 16-bucket duration histogram per series,
// labels service.name, span.name, span.kind, status.code, over 50 services,
// for the flush interval (start, end].
func RedDeltaBatch(from, to int, start, end time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	const services = 50
	for s := 0; s < services; s++ {
		svc, sum, h := RedService(md, s, "tracemetrics", pmetric.AggregationTemporalityDelta)
		first := from + (services+s-from%services)%services
		for k := first; k < to; k += services {
			dp := sum.DataPoints().AppendEmpty()
			dp.Attributes().PutStr("service.name", svc)
			dp.Attributes().PutStr("span.name", "GET /api/v1/resource/"+strconv.Itoa(k/4))
			dp.Attributes().PutStr("span.kind", [...]string{"SPAN_KIND_SERVER", "SPAN_KIND_CLIENT"}[k%2])
			dp.Attributes().PutStr("status.code", [...]string{"STATUS_CODE_UNSET", "STATUS_CODE_ERROR"}[(k/2)%2])
			dp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
			dp.SetTimestamp(pcommon.NewTimestampFromTime(end))
			dp.SetIntValue(3)
			hp := h.DataPoints().AppendEmpty()
			dp.Attributes().CopyTo(hp.Attributes())
			hp.SetStartTimestamp(dp.StartTimestamp())
			hp.SetTimestamp(dp.Timestamp())
			hp.ExplicitBounds().FromRaw(SpanmetricsBounds)
			counts := make([]uint64, len(SpanmetricsBounds)+1)
			counts[k%len(counts)] = 3
			hp.BucketCounts().FromRaw(counts)
			hp.SetCount(3)
			hp.SetSum(float64(3 * (k % 100)))
		}
	}
	return md
}
