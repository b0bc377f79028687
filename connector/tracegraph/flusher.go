package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"context"
	"time"

	"github.com/lightstep/go-expohisto/structure"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-red/otelcol-red/internal/exemplar"
	"github.com/otelcol-red/otelcol-red/internal/pipeline"
)

// Output names and unit, as servicegraph v0.159.0 emits them.
const (
	scopeName    = "traces_service_graph"
	metricTotal  = "traces_service_graph_request_total"
	metricFailed = "traces_service_graph_request_failed_total"
	metricServer = "traces_service_graph_request_server"
	metricClient = "traces_service_graph_request_client"
	// metricMessaging is Tempo's traces_service_graph_request_messaging_system_seconds once
	// through Prometheus.
	metricMessaging = "traces_service_graph_request_messaging_system"
	latencyUnit     = "s"
)

// flusher is the pipeline's flush goroutine (internal/pipeline): it builds the metrics of the
// snapshots the aggregator hands over and sends them to the next consumer, so a slow next
// consumer never holds up pairing, and pairing never waits for it. A tick that finds it busy is
// postponed until it hands its snapshot back (counted in flushes_skipped); with cumulative
// temporality the next flush carries the same totals and more, with delta the interval goes on.
type flusher struct {
	p      *plan
	next   consumer.Metrics
	logger *zap.Logger
	tel    *telemetry

	serverKeys, clientKeys []string // client_<dimension>, server_<dimension>
}

var _ pipeline.Flusher[*snapshot] = (*flusher)(nil)

func newFlusher(p *plan, next consumer.Metrics, logger *zap.Logger, tel *telemetry) *flusher {
	f := &flusher{p: p, next: next, logger: logger, tel: tel}
	for _, d := range p.dims {
		f.clientKeys = append(f.clientKeys, "client_"+d)
		f.serverKeys = append(f.serverKeys, "server_"+d)
	}
	return f
}

// Flush builds the metrics of snapshot s and sends them, when there are any.
func (f *flusher) Flush(s *snapshot) {
	t0 := time.Now()
	md, points := f.build(s)
	f.tel.recordFlush(time.Since(t0))
	if points == 0 {
		return
	}
	if err := f.next.ConsumeMetrics(context.Background(), md); err != nil {
		f.tel.exportErrors.Add(1)
		f.logger.Error("failed to send service graph metrics", zap.Error(err))
	}
	f.tel.flushes.Add(1)
}

// build writes one data point per series and metric: request_total, request_failed_total
// (failed series), and the server and client latency histograms, cumulative since start, or
// with delta temporality counted since start (the last flush) for the series that counted.
// It returns the points written.
func (f *flusher) build(t *snapshot) (pmetric.Metrics, int) {
	md := pmetric.NewMetrics()
	if t.live == 0 {
		return md, 0
	}
	temporality := pmetric.AggregationTemporalityCumulative
	if f.p.delta {
		temporality = pmetric.AggregationTemporalityDelta
	}
	rm := md.ResourceMetrics().AppendEmpty()
	if f.p.delta && f.p.writer != "" {
		rm.Resource().Attributes().PutStr("service.instance.id", f.p.writer)
	}
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(scopeName)
	ms := sm.Metrics()
	total := ms.AppendEmpty()
	total.SetName(metricTotal)
	totals := sumOf(total, temporality)
	var failedTotals pmetric.NumberDataPointSlice
	for id := range t.series {
		if s := &t.series[id]; s.live && (!f.p.delta || s.count > 0) && t.key(uint32(id))[keyFailed] == 1 {
			failed := ms.AppendEmpty()
			failed.SetName(metricFailed)
			failedTotals = sumOf(failed, temporality)
			break
		}
	}
	server := ms.AppendEmpty()
	server.SetName(metricServer)
	server.SetUnit(latencyUnit)
	client := ms.AppendEmpty()
	client.SetName(metricClient)
	client.SetUnit(latencyUnit)
	hists := []pmetric.Metric{histServer: server, histClient: client}
	if t.nh > histMessaging {
		messaging := ms.AppendEmpty()
		messaging.SetName(metricMessaging)
		messaging.SetUnit(latencyUnit)
		hists = append(hists, messaging)
	}
	for _, m := range hists {
		if f.p.bounds == nil {
			m.SetEmptyExponentialHistogram().SetAggregationTemporality(temporality)
		} else {
			m.SetEmptyHistogram().SetAggregationTemporality(temporality)
		}
	}
	attrs := pcommon.NewMap()
	points := 0
	for id := range t.series {
		s := &t.series[id]
		if !s.live || f.p.delta && s.count == 0 {
			continue
		}
		k := t.key(uint32(id))
		f.attributes(t, k, attrs)
		dp := totals.AppendEmpty()
		stamp(dp, t)
		dp.SetIntValue(int64(s.count))
		attrs.CopyTo(dp.Attributes())
		points++
		if k[keyFailed] == 1 {
			dp := failedTotals.AppendEmpty()
			stamp(dp, t)
			dp.SetIntValue(int64(s.count))
			attrs.CopyTo(dp.Attributes())
			points++
		}
		for which, m := range hists {
			h := s.latency[which]
			if which == histMessaging && h.count == 0 {
				// Only messaging edges of which both spans came have this one (Tempo: the
				// same).
				continue
			}
			var exemplars pmetric.ExemplarSlice
			if f.p.bounds == nil {
				dp := m.ExponentialHistogram().DataPoints().AppendEmpty()
				stamp(dp, t)
				attrs.CopyTo(dp.Attributes())
				expoPoint(t.expo[id][which], dp)
				exemplars = dp.Exemplars()
			} else {
				dp := m.Histogram().DataPoints().AppendEmpty()
				stamp(dp, t)
				attrs.CopyTo(dp.Attributes())
				dp.SetCount(h.count)
				dp.SetSum(h.sum)
				dp.ExplicitBounds().FromRaw(f.p.bounds)
				dp.BucketCounts().FromRaw(t.bucketCounts(uint32(id), which))
				exemplars = dp.Exemplars()
			}
			putExemplars(exemplars, t.exemplarsOf(uint32(id), which), t.now)
			points++
		}
	}
	if len(hists) > histMessaging {
		// No empty metric while there is no messaging edge.
		ms.RemoveIf(func(m pmetric.Metric) bool { return m.Name() == metricMessaging && dataPoints(m) == 0 })
	}
	return md, points
}

// stamped is what the data point types share for their timestamps.
type stamped interface {
	SetStartTimestamp(pcommon.Timestamp)
	SetTimestamp(pcommon.Timestamp)
}

// stamp sets dp's interval: that of snapshot s.
func stamp(dp stamped, s *snapshot) {
	dp.SetStartTimestamp(s.start)
	dp.SetTimestamp(s.now)
}

// attributes writes series key k's labels into m, in servicegraph's order: client, server,
// connection_type, failed, the dimensions, virtual_node.
func (f *flusher) attributes(in *snapshot, k []uint32, m pcommon.Map) {
	m.Clear()
	m.PutStr("client", in.str(k[keyClient]))
	m.PutStr("server", in.str(k[keyServer]))
	m.PutStr("connection_type", connectionNames[k[keyConn]])
	m.PutBool("failed", k[keyFailed] == 1)
	nd := len(f.p.dims)
	for i := range nd {
		if v := k[keyDims+i]; v != noValue {
			m.PutStr(f.clientKeys[i], in.str(v))
		}
		if v := k[keyDims+nd+i]; v != noValue {
			m.PutStr(f.serverKeys[i], in.str(v))
		}
	}
	if f.p.virtualNodeLabel {
		m.PutStr("virtual_node", virtualLabelNames[k[keyLabel]&^lateLabel])
	}
	if k[keyLabel]&lateLabel != 0 {
		m.PutStr("late", "true")
	}
}

// dataPoints returns the points of histogram m, explicit or exponential.
func dataPoints(m pmetric.Metric) int {
	if m.Type() == pmetric.MetricTypeExponentialHistogram {
		return m.ExponentialHistogram().DataPoints().Len()
	}
	return m.Histogram().DataPoints().Len()
}

// putExemplars writes xs into dst, stamped with the flush time as tracemetrics stamps its own.
func putExemplars(dst pmetric.ExemplarSlice, xs []exemplar.Exemplar, ts pcommon.Timestamp) {
	if len(xs) == 0 {
		return
	}
	dst.EnsureCapacity(len(xs))
	for i := range xs {
		x := dst.AppendEmpty()
		x.SetTimestamp(ts)
		x.SetTraceID(xs[i].TraceID)
		x.SetSpanID(xs[i].SpanID)
		x.SetDoubleValue(xs[i].Value)
	}
}

func sumOf(m pmetric.Metric, temporality pmetric.AggregationTemporality) pmetric.NumberDataPointSlice {
	s := m.SetEmptySum()
	s.SetIsMonotonic(true)
	s.SetAggregationTemporality(temporality)
	return s.DataPoints()
}

// expoPoint writes go-expohisto histogram x (nil: nothing observed) into dp, as servicegraph
// does.
func expoPoint(x *structure.Histogram[float64], dp pmetric.ExponentialHistogramDataPoint) {
	if x == nil {
		return
	}
	dp.SetCount(x.Count())
	dp.SetSum(x.Sum())
	if x.Count() != 0 {
		dp.SetMin(x.Min())
		dp.SetMax(x.Max())
	}
	dp.SetZeroCount(x.ZeroCount())
	dp.SetScale(x.Scale())
	for _, side := range []struct {
		in  *structure.Buckets
		out pmetric.ExponentialHistogramDataPointBuckets
	}{{x.Positive(), dp.Positive()}, {x.Negative(), dp.Negative()}} {
		side.out.SetOffset(side.in.Offset())
		side.out.BucketCounts().EnsureCapacity(int(side.in.Len()))
		for i := uint32(0); i < side.in.Len(); i++ {
			side.out.BucketCounts().Append(side.in.At(i))
		}
	}
}
