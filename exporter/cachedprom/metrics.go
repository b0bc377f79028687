package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/metadata"
)

// telemetry is the exporter's own metrics. The hot paths (scrape, ingest)
// only touch atomics; the OTel instruments read them from callbacks or are
// recorded by the renderer, off both paths.
type telemetry struct {
	series        atomic.Int64
	snapshotBytes atomic.Int64
	scrapes       atomic.Int64

	renderDuration metric.Float64Histogram
	dropped        metric.Int64Counter
	registration   metric.Registration
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	t := &telemetry{}
	meter := set.MeterProvider.Meter(metadata.ScopeName)
	var errs, err error
	t.renderDuration, err = meter.Float64Histogram("otelcol_exporter_cachedprom_render_duration",
		metric.WithDescription("Time to copy, format and compress one snapshot."),
		metric.WithUnit("s"))
	errs = errors.Join(errs, err)
	t.dropped, err = meter.Int64Counter("otelcol_exporter_cachedprom_dropped_over_cap",
		metric.WithDescription("Data points dropped because they would have created a series beyond max_series."),
		metric.WithUnit("{datapoint}"))
	errs = errors.Join(errs, err)
	seriesG, err := meter.Int64ObservableGauge("otelcol_exporter_cachedprom_series",
		metric.WithDescription("Series held, as of the last render."), metric.WithUnit("{series}"))
	errs = errors.Join(errs, err)
	bytesG, err := meter.Int64ObservableGauge("otelcol_exporter_cachedprom_snapshot_bytes",
		metric.WithDescription("Bytes held by the published snapshot, all formats and encodings."), metric.WithUnit("By"))
	errs = errors.Join(errs, err)
	scrapesC, err := meter.Int64ObservableCounter("otelcol_exporter_cachedprom_scrapes",
		metric.WithDescription("Scrapes served."), metric.WithUnit("{scrape}"))
	errs = errors.Join(errs, err)
	if errs != nil {
		return nil, errs
	}
	t.registration, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(seriesG, t.series.Load())
		o.ObserveInt64(bytesG, t.snapshotBytes.Load())
		o.ObserveInt64(scrapesC, t.scrapes.Load())
		return nil
	}, seriesG, bytesG, scrapesC)
	return t, err
}

func (t *telemetry) recordRender(d time.Duration, series, bytes int) {
	t.series.Store(int64(series))
	t.snapshotBytes.Store(int64(bytes))
	t.renderDuration.Record(context.Background(), d.Seconds())
}

func (t *telemetry) recordDropped(n int64) {
	t.dropped.Add(context.Background(), n)
}

func (t *telemetry) shutdown() {
	if t.registration != nil {
		_ = t.registration.Unregister()
	}
}
