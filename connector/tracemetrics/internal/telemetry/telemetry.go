// Package telemetry is the tracemetrics connector's own telemetry behind a small wrapper: the
// stages only add to and store atomics (the hot paths never touch the OTel API); the OTel
// metric API is called from an observable callback at collection time and from the flusher.
package telemetry // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/telemetry"

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

// Telemetry is the connector's own Telemetry. The hot paths only touch atomics; the OTel
// metric API is called from observable callbacks at collection time and from the flusher.
type Telemetry struct {
	SeriesLive      atomic.Int64
	AggregatedSpans atomic.Int64                       // added once per drained round by the aggregator
	OverflowSpans   [series.OverflowKinds]atomic.Int64 // by the limit that refused the series; [noOverflow] unused
	Flushes         atomic.Int64                       // added once per flush by the flusher
	FlushesSkipped  atomic.Int64
	RefusedSpans    atomic.Int64
	ExportErrors    atomic.Int64
	InvalidWeights  atomic.Int64 // added per batch by the aggregator

	// By limit (overflowKind), written by the aggregator: promotions and demotions of
	// cap_selection by traffic at each swap, and the demand estimates published at each
	// swap (internal/aggregate).
	PromotedSeries [series.OverflowKinds]atomic.Int64
	DemotedSeries  [series.OverflowKinds]atomic.Int64
	SeriesDemand   [series.OverflowKinds]atomic.Int64
	OverflowSeries [series.OverflowKinds]atomic.Int64
	SelectionBytes atomic.Int64 // cap_selection's refused tables and idle lists, at each swap

	// max_cardinality_per_label, written by the aggregator: spans counted in a series whose
	// value of some label was replaced, added per batch, and per label (the plan's
	// LimitedLabels) the demand estimates published at each swap. Empty when off.
	LabelOverflowSpans  atomic.Int64
	LabelDemand         []atomic.Int64
	LabelOverflowValues []atomic.Int64

	flushDuration metric.Float64Histogram
	flushPoints   metric.Int64Histogram
	reg           metric.Registration
}

// Queue is what the telemetry reads of the intake ring.
type Queue interface {
	Len() int
	HeldBytes() int64
	Stats() intake.Stats
}

// Renames are span_name's counters, read at collection time.
type Renames struct {
	// Layers names the layers that rename spans (semantic_conventions, rule, clustering),
	// each with its count.
	Layers []Layer
	// Templates is the span-name templates clustering holds; nil without clustering.
	Templates func() int64
	// DryRenamed is the spans clustering would have renamed; nil unless it runs dry.
	DryRenamed func() int64
}

// Layer is a span_name layer that renames spans, and how many it renamed.
type Layer struct {
	Name    string
	Renamed func() int64
}

// New returns the telemetry of a connector with plan p and intake ring q; renames is nil
// when span_name is off.
func New(set component.TelemetrySettings, q Queue, p *series.Plan, renames *Renames) (*Telemetry, error) {
	t := &Telemetry{}
	var labels []string
	if p.MaxPerLabel > 0 {
		labels = p.LimitedLabels()
		t.LabelDemand = make([]atomic.Int64, len(labels))
		t.LabelOverflowValues = make([]atomic.Int64, len(labels))
	}
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
	selMemory := gauge("otelcol_connector_tracemetrics_selection_memory", "Bytes cap_selection by traffic holds to count refused series and list idle ones (bounded by cap_selection.memory_mib, and 8 bytes per idle series).", "By")
	labelDemand := gauge("otelcol_connector_tracemetrics_label_demand", "Distinct values offered for a label limited by max_cardinality_per_label over about the last series_expiration, all services together, estimated; by label.", "{values}")
	labelOverflow := gauge("otelcol_connector_tracemetrics_label_overflow_values", "Distinct values max_cardinality_per_label replaced by __cardinality_overflow__ over about the last series_expiration, all services together, estimated; by label.", "{values}")
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
	var perLabelSet metric.ObserveOption
	var labelSets []metric.ObserveOption
	if p.MaxPerLabel > 0 {
		perLabelSet = metric.WithAttributeSet(attribute.NewSet(attribute.String("limit", series.LabelLimit)))
		for _, l := range labels {
			labelSets = append(labelSets, metric.WithAttributeSet(attribute.NewSet(attribute.String("label", l))))
		}
	}
	// One series per configured layer, from 0, as for the limits.
	var layerSets []metric.ObserveOption
	if renames != nil {
		for _, l := range renames.Layers {
			layerSets = append(layerSets, metric.WithAttributeSet(attribute.NewSet(attribute.String("layer", l.Name))))
		}
	}
	t.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := q.Stats()
		o.ObserveInt64(liveSeries, t.SeriesLive.Load())
		o.ObserveInt64(depth, int64(q.Len()))
		o.ObserveInt64(aggregated, t.AggregatedSpans.Load())
		for k, set := range limitSets {
			if set != nil {
				o.ObserveInt64(overflow, t.OverflowSpans[k].Load(), set)
				o.ObserveInt64(demand, t.SeriesDemand[k].Load(), set)
				o.ObserveInt64(overflowSeries, t.OverflowSeries[k].Load(), set)
				if k != int(series.LimitOverflow) && p.ByTraffic {
					o.ObserveInt64(promoted, t.PromotedSeries[k].Load(), set)
					o.ObserveInt64(demoted, t.DemotedSeries[k].Load(), set)
				}
			}
		}
		if perLabelSet != nil {
			o.ObserveInt64(overflow, t.LabelOverflowSpans.Load(), perLabelSet)
		}
		for i, set := range labelSets {
			o.ObserveInt64(labelDemand, t.LabelDemand[i].Load(), set)
			o.ObserveInt64(labelOverflow, t.LabelOverflowValues[i].Load(), set)
		}
		if p.ByTraffic && (p.MaxSeries > 0 || p.MaxService > 0) {
			o.ObserveInt64(selMemory, t.SelectionBytes.Load())
		}
		o.ObserveInt64(fullWaits, int64(st.FullWaits))
		o.ObserveInt64(heldBytes, q.HeldBytes())
		o.ObserveInt64(bytesWaits, int64(st.BytesWaits))
		o.ObserveInt64(lost, int64(st.LostOffers))
		o.ObserveInt64(flushes, t.Flushes.Load())
		o.ObserveInt64(skipped, t.FlushesSkipped.Load())
		o.ObserveInt64(refused, t.RefusedSpans.Load())
		o.ObserveInt64(exportErrs, t.ExportErrors.Load())
		for i, set := range layerSets {
			o.ObserveInt64(renamed, renames.Layers[i].Renamed(), set)
		}
		if renames != nil && renames.Templates != nil {
			o.ObserveInt64(templates, renames.Templates())
		}
		if renames != nil && renames.DryRenamed != nil {
			o.ObserveInt64(dryRenamed, renames.DryRenamed())
		}
		o.ObserveInt64(invalidW, t.InvalidWeights.Load())
		return nil
	}, liveSeries, depth, aggregated, overflow, demand, overflowSeries, promoted, demoted, selMemory, labelDemand, labelOverflow, fullWaits, heldBytes, bytesWaits, lost, flushes, skipped, refused, exportErrs, renamed, dryRenamed, templates, invalidW)
	return t, err
}

// RecordFlush records a flush that took d and sent points data points.
func (t *Telemetry) RecordFlush(d time.Duration, points int) {
	if t.flushDuration == nil {
		return
	}
	t.flushDuration.Record(context.Background(), d.Seconds())
	t.flushPoints.Record(context.Background(), int64(points))
}

// Shutdown unregisters the callback (once: the pipeline stage's Shutdown runs it once).
func (t *Telemetry) Shutdown() {
	if t.reg != nil {
		_ = t.reg.Unregister()
	}
}
