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
// metrics are read. The instruments are metadata.yaml's, generated into internal/metadata;
// every one is asynchronous, so the check loop never touches the OTel API.
type telemetry struct {
	builder *metadata.TelemetryBuilder
}

func newTelemetry(set component.TelemetrySettings, t *tuner) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	err = errors.Join(
		tb.RegisterExtensionGcheadroomGcPercentCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(t.percent.Load())
			return nil
		}),
		tb.RegisterExtensionGcheadroomLiveHeapCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(t.live.Load())
			return nil
		}),
		tb.RegisterExtensionGcheadroomOffHeapCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(t.offHeap.Load())
			return nil
		}),
		// No limit reads as math.MaxInt64: a gauge at 9.2e18 would read as a limit, so none
		// is reported.
		tb.RegisterExtensionGcheadroomMemoryLimitCallback(func(_ context.Context, o metric.Int64Observer) error {
			if l := t.limit.Load(); l > 0 && l < math.MaxInt64 {
				o.Observe(l)
			}
			return nil
		}),
	)
	if err != nil {
		tb.Shutdown()
		return nil, err
	}
	return &telemetry{builder: tb}, nil
}

func (t *telemetry) shutdown() {
	t.builder.Shutdown()
}
