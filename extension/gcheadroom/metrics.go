package gcheadroom // import "github.com/otelcol-red/otelcol-red/extension/gcheadroom"

import (
	"context"
	"errors"
	"math"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-red/otelcol-red/extension/gcheadroom/internal/metadata"
)

// telemetry reports what the tuner set and why, from its atomics, when the collector's own
// metrics are read.
type telemetry struct {
	registration metric.Registration
}

func newTelemetry(set component.TelemetrySettings, t *tuner) (*telemetry, error) {
	meter := set.MeterProvider.Meter(metadata.ScopeName)
	var errs, err error
	percentG, err := meter.Int64ObservableGauge("otelcol_extension_gcheadroom_gc_percent",
		metric.WithDescription("The GC percent in effect (GOGC as the extension last set it; -1 when off)."),
		metric.WithUnit("%"))
	errs = errors.Join(errs, err)
	liveG, err := meter.Int64ObservableGauge("otelcol_extension_gcheadroom_live_heap",
		metric.WithDescription("The heap the last garbage collection found live, as the extension last read it."),
		metric.WithUnit("By"))
	errs = errors.Join(errs, err)
	offHeapG, err := meter.Int64ObservableGauge("otelcol_extension_gcheadroom_off_heap",
		metric.WithDescription("Bytes mapped outside the Go heap (cachedprom's series store and snapshot), as the extension last read them; 0 while it does not adjust the memory limit."),
		metric.WithUnit("By"))
	errs = errors.Join(errs, err)
	limitG, err := meter.Int64ObservableGauge("otelcol_extension_gcheadroom_memory_limit",
		metric.WithDescription("The Go memory limit in effect, as the extension last read or set it (GOMEMLIMIT less the off-heap bytes); not reported without a memory limit."),
		metric.WithUnit("By"))
	errs = errors.Join(errs, err)
	if errs != nil {
		return nil, errs
	}
	tel := &telemetry{}
	tel.registration, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(percentG, t.percent.Load())
		o.ObserveInt64(liveG, t.live.Load())
		o.ObserveInt64(offHeapG, t.offHeap.Load())
		if l := t.limit.Load(); l > 0 && l < math.MaxInt64 {
			o.ObserveInt64(limitG, l)
		}
		return nil
	}, percentG, liveG, offHeapG, limitG)
	return tel, err
}

func (t *telemetry) shutdown() {
	if t.registration != nil {
		_ = t.registration.Unregister()
	}
}
