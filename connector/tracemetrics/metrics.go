package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/metadata"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/intake"
)

// telemetry is the connector's own telemetry. The hot paths only touch atomics; the OTel
// metric API is called from observable callbacks at collection time and from the flusher.
type telemetry struct {
	seriesLive      atomic.Int64
	aggregatedSpans atomic.Int64                       // added once per drained round by the aggregator
	overflowSpans   [series.OverflowKinds]atomic.Int64 // by the limit that refused the series; [noOverflow] unused
	flushes         atomic.Int64                       // added once per flush by the flusher
	flushesSkipped  atomic.Int64
	refusedSpans    atomic.Int64
	exportErrors    atomic.Int64
	invalidWeights  atomic.Int64 // added per batch by the aggregator

	// By limit (overflowKind), written by the aggregator: promotions and demotions of
	// cap_selection by traffic at each swap (selection.go), and the demand estimates
	// published at each swap (demand.go).
	promotedSeries [series.OverflowKinds]atomic.Int64
	demotedSeries  [series.OverflowKinds]atomic.Int64
	seriesDemand   [series.OverflowKinds]atomic.Int64
	overflowSeries [series.OverflowKinds]atomic.Int64

	flushDuration metric.Float64Histogram
	flushPoints   metric.Int64Histogram
	reg           metric.Registration
}

func newTelemetry(set component.TelemetrySettings, q *intake.Queue[series.Batch], p *series.Plan, names *spanNamer) (*telemetry, error) {
	t := &telemetry{}
	if set.MeterProvider == nil {
		return t, nil
	}
	m := set.MeterProvider.Meter(metadata.ScopeName)
	var errs []error
	gauge := func(name, desc, unit string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithDescription(desc), metric.WithUnit(unit))
		errs = append(errs, err)
		return g
	}
	counter := func(name, desc, unit string) metric.Int64ObservableCounter {
		c, err := m.Int64ObservableCounter(name, metric.WithDescription(desc), metric.WithUnit(unit))
		errs = append(errs, err)
		return c
	}
	liveSeries := gauge("otelcol_connector_tracemetrics_series", "Series held by the connector that count against the limits (overflow series, and series demoted by cap_selection until they expire, excluded).", "{series}")
	depth := gauge("otelcol_connector_tracemetrics_ring_depth", "Batches waiting in the intake ring.", "{batches}")
	aggregated := counter("otelcol_connector_tracemetrics_aggregated_spans", "Spans folded into the series store by the aggregator; spans of resources without service.name are skipped and not counted.", "{spans}")
	overflow := counter("otelcol_connector_tracemetrics_overflow_spans", "Spans (and events) counted in an otel.metric.overflow series because a series limit was reached, by the limit (its configuration key).", "{spans}")
	fullWaits := counter("otelcol_connector_tracemetrics_ring_full_waits", "ConsumeTraces calls that found the intake ring full and waited.", "{calls}")
	heldBytes := gauge("otelcol_connector_tracemetrics_ring_memory", "Bytes of the reduced batches queued for the aggregator or being applied (bounded by ring_memory_mib).", "By")
	bytesWaits := counter("otelcol_connector_tracemetrics_ring_memory_waits", "ConsumeTraces calls whose batch would have passed ring_memory_mib and waited.", "{calls}")
	lost := counter("otelcol_connector_tracemetrics_ring_lost_offers", "Ring offers lost to contention while there was room, and retried.", "{offers}")
	flushes := counter("otelcol_connector_tracemetrics_flushes", "Flushes completed: the metrics of an interval built and handed to the next consumer (Shutdown's final flush included).", "{flushes}")
	skipped := counter("otelcol_connector_tracemetrics_flushes_skipped", "Flushes postponed because the previous one was still being sent.", "{flushes}")
	refused := counter("otelcol_connector_tracemetrics_refused_spans", "Spans refused by ConsumeTraces (context done while the ring was full, or shut down).", "{spans}")
	exportErrs := counter("otelcol_connector_tracemetrics_export_errors", "Flushes the next consumer returned an error for.", "{flushes}")
	renamed := counter("otelcol_connector_tracemetrics_renamed_spans", "Spans whose name span_name rewrote for the metrics, by layer (semantic_conventions, rule, clustering); a span renamed by both semantic_conventions and rule counts in both.", "{spans}")
	dryRenamed := counter("otelcol_connector_tracemetrics_dry_run_renamed_spans", "Spans span_name.clustering would have renamed, had dry_run been off.", "{spans}")
	templates := gauge("otelcol_connector_tracemetrics_span_name_templates", "Span-name templates span_name.clustering holds, all services.", "{templates}")
	demand := gauge("otelcol_connector_tracemetrics_series_demand", "Distinct series offered to a limit over about the last series_expiration (those it let in and those it refused), estimated: what it would hold without it; by the limit (its configuration key).", "{series}")
	overflowSeries := gauge("otelcol_connector_tracemetrics_overflow_series", "Distinct series a limit refused (their spans went to an overflow series) over about the last series_expiration, estimated; by the limit.", "{series}")
	promoted := counter("otelcol_connector_tracemetrics_promoted_series", "Refused series promoted by a re-ranking (cap_selection by traffic) that took their reserved slot with their next span; by the limit.", "{series}")
	demoted := counter("otelcol_connector_tracemetrics_demoted_series", "Series that gave up their place to a busier refused series at a flush (cap_selection by traffic); their later spans go to the overflow series; by the limit.", "{series}")
	invalidW := counter("otelcol_connector_tracemetrics_invalid_sampling_weights", "Spans whose tracestate threshold (ot=th) or sampling probability attribute was invalid, or inconsistent with ot=rv, and which were counted 1.", "{spans}")
	var err error
	t.flushDuration, err = m.Float64Histogram("otelcol_connector_tracemetrics_flush_duration",
		metric.WithDescription("Time to build and send the metrics of one flush."), metric.WithUnit("s"))
	errs = append(errs, err)
	t.flushPoints, err = m.Int64Histogram("otelcol_connector_tracemetrics_flush_data_points",
		metric.WithDescription("Data points sent by one flush."), metric.WithUnit("{points}"))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// One series per configured limit, from 0: a rate() over a series that appears at its
	// first overflow would miss that first increase.
	configured := [series.OverflowKinds]bool{
		series.LimitOverflow:   p.CardLimit > 0,
		series.ServiceOverflow: p.MaxService > 0,
		series.GlobalOverflow:  p.MaxSeries > 0,
	}
	var limitSets [series.OverflowKinds]metric.ObserveOption
	for k, on := range configured {
		if on {
			limitSets[k] = metric.WithAttributeSet(attribute.NewSet(attribute.String("limit", series.OverflowLimits[k])))
		}
	}
	// One series per configured layer, from 0, as for the limits.
	var layerSets [renameLayers]metric.ObserveOption
	if n := names; n != nil {
		for k, on := range [renameLayers]bool{
			renamedBySemconv:    n.semconv,
			renamedByRule:       n.rules != nil,
			renamedByClustering: n.clusters != nil && !n.dryRun,
		} {
			if on {
				layerSets[k] = metric.WithAttributeSet(attribute.NewSet(attribute.String("layer", renameLayerNames[k])))
			}
		}
	}
	t.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := q.Stats()
		o.ObserveInt64(liveSeries, t.seriesLive.Load())
		o.ObserveInt64(depth, int64(q.Len()))
		o.ObserveInt64(aggregated, t.aggregatedSpans.Load())
		for k, set := range limitSets {
			if set != nil {
				o.ObserveInt64(overflow, t.overflowSpans[k].Load(), set)
				o.ObserveInt64(demand, t.seriesDemand[k].Load(), set)
				o.ObserveInt64(overflowSeries, t.overflowSeries[k].Load(), set)
				if k != int(series.LimitOverflow) && p.ByTraffic {
					o.ObserveInt64(promoted, t.promotedSeries[k].Load(), set)
					o.ObserveInt64(demoted, t.demotedSeries[k].Load(), set)
				}
			}
		}
		o.ObserveInt64(fullWaits, int64(st.FullWaits))
		o.ObserveInt64(heldBytes, q.HeldBytes())
		o.ObserveInt64(bytesWaits, int64(st.BytesWaits))
		o.ObserveInt64(lost, int64(st.LostOffers))
		o.ObserveInt64(flushes, t.flushes.Load())
		o.ObserveInt64(skipped, t.flushesSkipped.Load())
		o.ObserveInt64(refused, t.refusedSpans.Load())
		o.ObserveInt64(exportErrs, t.exportErrors.Load())
		for k, set := range layerSets {
			if set != nil {
				o.ObserveInt64(renamed, names.renamed[k].Load(), set)
			}
		}
		if n := names; n != nil && n.clusters != nil {
			o.ObserveInt64(templates, n.clusters.Templates())
			if n.dryRun {
				o.ObserveInt64(dryRenamed, n.dryRenamed.Load())
			}
		}
		o.ObserveInt64(invalidW, t.invalidWeights.Load())
		return nil
	}, liveSeries, depth, aggregated, overflow, demand, overflowSeries, promoted, demoted, fullWaits, heldBytes, bytesWaits, lost, flushes, skipped, refused, exportErrs, renamed, dryRenamed, templates, invalidW)
	return t, err
}

func (t *telemetry) recordFlush(d time.Duration, points int) {
	if t.flushDuration == nil {
		return
	}
	t.flushDuration.Record(context.Background(), d.Seconds())
	t.flushPoints.Record(context.Background(), int64(points))
}

// shutdown unregisters the callback (once: the stage's Shutdown runs it once).
func (t *telemetry) shutdown() {
	if t.reg != nil {
		_ = t.reg.Unregister()
	}
}
