// Package gcheadroom provides an extension that caps the Go garbage collector's headroom in
// bytes. GOGC sets the headroom as a share of the live heap (100: the heap may double between
// collections), which suits a small heap and wastes memory on a large one: a gateway holding
// a million series keeps hundreds of MiB of mostly pointer-free tables live, and GOGC=100 lets
// the process grow by as much again. The extension lowers the GC percent as the live heap
// grows, so the headroom stays at max_headroom_mib, and leaves GOGC alone below that.
package gcheadroom // import "github.com/otelcol-red/otelcol-red/extension/gcheadroom"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/otelcol-red/otelcol-red/extension/gcheadroom/internal/metadata"
)

// NewFactory returns the factory of the gcheadroom extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		func(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
			return newTuner(set.TelemetrySettings, cfg.(*Config))
		},
		metadata.ExtensionStability,
	)
}
