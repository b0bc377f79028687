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
// only touch atomics or plain counters under the store lock; the
// asynchronous instruments read the atomics when the collector's own
// metrics are read, and the render loop records the rest through record*,
// off both paths. The instruments are metadata.yaml's, generated into
// internal/metadata.
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

	builder *metadata.TelemetryBuilder
	// reasons is the reason attribute of each event, built once.
	reasons [store.NumEvents]metric.AddOption
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	t := &telemetry{builder: tb}
	for k := range store.NumEvents {
		t.reasons[k] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", k.String())))
	}
	// observe reads one atomic: the gauges and the counters kept as atomics.
	observe := func(v *atomic.Int64) metric.Int64Callback {
		return func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(v.Load())
			return nil
		}
	}
	err = errors.Join(
		tb.RegisterExporterCachedpromSeriesCallback(observe(&t.series)),
		tb.RegisterExporterCachedpromLabelSetsCallback(observe(&t.labelSets)),
		tb.RegisterExporterCachedpromHiddenSeriesCallback(observe(&t.hidden)),
		tb.RegisterExporterCachedpromSnapshotBytesCallback(observe(&t.snapshotBytes)),
		tb.RegisterExporterCachedpromScrapesCallback(observe(&t.scrapes)),
		tb.RegisterExporterCachedpromScrapesRefusedCallback(observe(&t.scrapesRefused)),
		tb.RegisterExporterCachedpromScrapesPacedCallback(observe(&t.scrapesPaced)),
		tb.RegisterExporterCachedpromRenderSpareWaitsCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(t.spareWaits[spareReused].Load(), spareOutcome[spareReused])
			o.Observe(t.spareWaits[spareFresh].Load(), spareOutcome[spareFresh])
			return nil
		}),
	)
	if err != nil {
		tb.Shutdown()
		return nil, err
	}
	return t, nil
}

func (t *telemetry) recordRender(d time.Duration, snap *render.Snapshot, labelSets int) {
	t.series.Store(int64(snap.Series()))
	t.hidden.Store(int64(snap.Hidden()))
	t.labelSets.Store(int64(labelSets))
	t.snapshotBytes.Store(int64(snap.Size()))
	t.builder.ExporterCachedpromRenderDuration.Record(context.Background(), d.Seconds())
}

// Outcomes of a render's wait for its spare (telemetry.spareWaits).
const (
	spareReused = iota
	spareFresh
)

// spareOutcome are the outcome attributes of render_spare_waits, made once.
var spareOutcome = [2]metric.ObserveOption{
	metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", "spare"))),
	metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", "fresh"))),
}

// recordEvents adds what ingest counted, by reason: to dropped_points for
// the points not stored, to adjusted_points for the others.
func (t *telemetry) recordEvents(ev store.Events) {
	for k, n := range ev {
		if n == 0 {
			continue
		}
		counter := t.builder.ExporterCachedpromAdjustedPoints
		if store.Event(k).Dropped() {
			counter = t.builder.ExporterCachedpromDroppedPoints
		}
		counter.Add(context.Background(), n, t.reasons[k])
	}
}

func (t *telemetry) shutdown() {
	t.builder.Shutdown()
}
