package hotspotfilter // import "github.com/otelcol-red/otelcol-red/connector/hotspotfilter"

import (
	"context"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-red/otelcol-red/connector/hotspotfilter/internal/metadata"
)

// Names and attributes of the metrics output.
const (
	metricKept    = "hotspotfilter.spans.kept"
	metricDropped = "hotspotfilter.spans.dropped"
	metricHot     = "hotspotfilter.services.hot"
	metricTracked = "hotspotfilter.services.tracked"

	attrService  = "service.name"
	attrRule     = "hotspotfilter.rule"
	attrReason   = "hotspotfilter.reason"
	attrOverflow = "otel.metric.overflow"
)

// flush emits the counters and the hot-service gauge on the metrics output,
// then forgets the services idle for longer than service_expiry. It runs on
// the flush loop, off the data path: producers only ever touch atomics.
func (f *filter) flush(ctx context.Context) error {
	md := f.collectMetrics()
	if f.metricsNext == nil || md.MetricCount() == 0 {
		return nil
	}
	return f.metricsNext.ConsumeMetrics(ctx, md)
}

func (f *filter) collectMetrics() pmetric.Metrics {
	nowTime := f.clock.Now()
	now := pcommon.NewTimestampFromTime(nowTime)
	var expireBefore int64
	if f.expiry > 0 {
		expireBefore = int64(nowTime.Sub(f.epoch) - f.expiry)
	}

	md := pmetric.NewMetrics()
	sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(metadata.ScopeName)

	kept := newSum(sm, metricKept, "Spans passed on, by service, rule and reason (reason unmatched: no rule selected the span).")
	drop := newSum(sm, metricDropped, "Spans dropped over budget, by service and rule.")
	hot := newGauge(sm, metricHot, "Services that went over budget within the last interval, by rule.")
	tracked := newGauge(sm, metricTracked, "Services whose budget is tracked, by rule; at max_services further services share the overflow budget.")

	var entries []*serviceEntry
	for _, ru := range f.rules {
		entries = ru.services.collect(entries[:0], expireBefore)
		var hotServices int64
		for _, e := range entries {
			if e.hot.Swap(false) {
				hotServices++
			}
			for o := keptBudget; o < numOutcomes; o++ {
				if o == keptUnmatched || o == dropped {
					continue
				}
				if c := e.counts[o].Load(); c > 0 {
					addPoint(kept, e, ru.name, reason[o], c, now)
				}
			}
			if c := e.counts[dropped].Load(); c > 0 || !e.overflow {
				addPoint(drop, e, ru.name, "", c, now)
			}
		}
		gaugePoint(hot, ru.name, hotServices, now)
		gaugePoint(tracked, ru.name, ru.services.size.Load(), now)
	}
	entries = f.unmatched.collect(entries[:0], expireBefore)
	for _, e := range entries {
		if c := e.counts[keptUnmatched].Load(); c > 0 {
			addPoint(kept, e, "", reason[keptUnmatched], c, now)
		}
	}
	return md
}

func newSum(sm pmetric.ScopeMetrics, name, description string) pmetric.NumberDataPointSlice {
	m := sm.Metrics().AppendEmpty()
	m.SetName(name)
	m.SetDescription(description)
	m.SetUnit("{span}")
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	return sum.DataPoints()
}

func newGauge(sm pmetric.ScopeMetrics, name, description string) pmetric.NumberDataPointSlice {
	m := sm.Metrics().AppendEmpty()
	m.SetName(name)
	m.SetDescription(description)
	m.SetUnit("{service}")
	return m.SetEmptyGauge().DataPoints()
}

// addPoint adds one cumulative point for an entry. Rule and reason are left
// out when empty.
func addPoint(dps pmetric.NumberDataPointSlice, e *serviceEntry, ruleName, why string, value int64, now pcommon.Timestamp) {
	dp := dps.AppendEmpty()
	dp.SetStartTimestamp(pcommon.Timestamp(e.start))
	dp.SetTimestamp(now)
	dp.SetIntValue(value)
	attrs := dp.Attributes()
	if e.overflow {
		attrs.PutBool(attrOverflow, true)
	} else {
		attrs.PutStr(attrService, e.service)
	}
	if ruleName != "" {
		attrs.PutStr(attrRule, ruleName)
	}
	if why != "" {
		attrs.PutStr(attrReason, why)
	}
}

func gaugePoint(dps pmetric.NumberDataPointSlice, ruleName string, value int64, now pcommon.Timestamp) {
	dp := dps.AppendEmpty()
	dp.SetTimestamp(now)
	dp.SetIntValue(value)
	dp.Attributes().PutStr(attrRule, ruleName)
}
