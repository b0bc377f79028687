package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/metadata"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"
)

// telemetry is the exporter's own metrics. The hot paths (scrape, ingest)
// only touch atomics or plain counters under the store lock; the OTel
// instruments read them from callbacks or are recorded by the renderer, off
// both paths.
type telemetry struct {
	series         atomic.Int64
	labelSets      atomic.Int64
	hidden         atomic.Int64
	snapshotBytes  atomic.Int64
	scrapes        atomic.Int64
	scrapesRefused atomic.Int64
	scrapesPaced   atomic.Int64
	// spareWaits counts renders that waited for a scrape reading their
	// spare: by outcome, the spare reused or, past the wait, a fresh mapping.
	spareWaits [2]atomic.Int64

	renderDuration metric.Float64Histogram
	dropped        metric.Int64Counter
	adjusted       metric.Int64Counter
	registration   metric.Registration
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	t := &telemetry{}
	meter := set.MeterProvider.Meter(metadata.ScopeName)
	var errs, err error
	t.renderDuration, err = meter.Float64Histogram("otelcol_exporter_cachedprom_render_duration",
		metric.WithDescription("Time to read, format and compress one snapshot."),
		metric.WithUnit("s"))
	errs = errors.Join(errs, err)
	t.dropped, err = meter.Int64Counter("otelcol_exporter_cachedprom_dropped_points",
		metric.WithDescription("Data points not stored, by reason."),
		metric.WithUnit("{datapoint}"))
	errs = errors.Join(errs, err)
	t.adjusted, err = meter.Int64Counter("otelcol_exporter_cachedprom_adjusted_points",
		metric.WithDescription("Data points stored differently from their OTLP form, by reason: overflow series, merged series, repaired labels."),
		metric.WithUnit("{datapoint}"))
	errs = errors.Join(errs, err)
	seriesG, err := meter.Int64ObservableGauge("otelcol_exporter_cachedprom_series",
		metric.WithDescription("Series in the last snapshot."), metric.WithUnit("{series}"))
	errs = errors.Join(errs, err)
	labelSetsG, err := meter.Int64ObservableGauge("otelcol_exporter_cachedprom_label_sets",
		metric.WithDescription("Label sets held, as of the last render: the unit of max_series."), metric.WithUnit("{series}"))
	errs = errors.Join(errs, err)
	hiddenG, err := meter.Int64ObservableGauge("otelcol_exporter_cachedprom_hidden_series",
		metric.WithDescription("Series left out of the last snapshot because their sample names collide with another family's."), metric.WithUnit("{series}"))
	errs = errors.Join(errs, err)
	bytesG, err := meter.Int64ObservableGauge("otelcol_exporter_cachedprom_snapshot_bytes",
		metric.WithDescription("Bytes held by the published snapshot, all formats and encodings."), metric.WithUnit("By"))
	errs = errors.Join(errs, err)
	scrapesC, err := meter.Int64ObservableCounter("otelcol_exporter_cachedprom_scrapes",
		metric.WithDescription("Scrapes served."), metric.WithUnit("{scrape}"))
	errs = errors.Join(errs, err)
	refusedC, err := meter.Int64ObservableCounter("otelcol_exporter_cachedprom_scrapes_refused",
		metric.WithDescription("Scrapes answered 503 because max_concurrent_scrapes were in flight."), metric.WithUnit("{scrape}"))
	errs = errors.Join(errs, err)
	pacedC, err := meter.Int64ObservableCounter("otelcol_exporter_cachedprom_scrapes_paced",
		metric.WithDescription("Scrapes held back until min_scrape_interval had passed since the same client's previous one."), metric.WithUnit("{scrape}"))
	errs = errors.Join(errs, err)
	spareWaitsC, err := meter.Int64ObservableCounter("otelcol_exporter_cachedprom_render_spare_waits",
		metric.WithDescription("Renders that waited for a scrape still reading the retired snapshot whose buffers they reuse, by outcome: spare (it ended, the buffers were reused) or fresh (it outlasted the wait, the render took new ones)."),
		metric.WithUnit("{render}"))
	errs = errors.Join(errs, err)
	if errs != nil {
		return nil, errs
	}
	t.registration, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(seriesG, t.series.Load())
		o.ObserveInt64(labelSetsG, t.labelSets.Load())
		o.ObserveInt64(hiddenG, t.hidden.Load())
		o.ObserveInt64(bytesG, t.snapshotBytes.Load())
		o.ObserveInt64(scrapesC, t.scrapes.Load())
		o.ObserveInt64(refusedC, t.scrapesRefused.Load())
		o.ObserveInt64(pacedC, t.scrapesPaced.Load())
		o.ObserveInt64(spareWaitsC, t.spareWaits[spareReused].Load(), spareOutcome[spareReused])
		o.ObserveInt64(spareWaitsC, t.spareWaits[spareFresh].Load(), spareOutcome[spareFresh])
		return nil
	}, seriesG, labelSetsG, hiddenG, bytesG, scrapesC, refusedC, pacedC, spareWaitsC)
	return t, err
}

func (t *telemetry) recordRender(d time.Duration, snap *render.Snapshot, labelSets int) {
	t.series.Store(int64(snap.Series()))
	t.hidden.Store(int64(snap.Hidden()))
	t.labelSets.Store(int64(labelSets))
	t.snapshotBytes.Store(int64(snap.Size()))
	t.renderDuration.Record(context.Background(), d.Seconds())
}

// Outcomes of a render's wait for its spare (telemetry.spareWaits).
const (
	spareReused = iota
	spareFresh
)

// spareOutcome are the outcome attributes of render_spare_waits, made once.
var spareOutcome = [2]metric.ObserveOption{
	metric.WithAttributes(attribute.String("outcome", "spare")),
	metric.WithAttributes(attribute.String("outcome", "fresh")),
}

// recordEvents adds what ingest counted, by reason.
func (t *telemetry) recordEvents(ev store.Events) {
	for k, n := range ev {
		if n == 0 {
			continue
		}
		counter := t.adjusted
		if store.Event(k).Dropped() {
			counter = t.dropped
		}
		counter.Add(context.Background(), n, metric.WithAttributes(attribute.String("reason", store.Event(k).String())))
	}
}

func (t *telemetry) shutdown() {
	if t.registration != nil {
		_ = t.registration.Unregister()
	}
}
