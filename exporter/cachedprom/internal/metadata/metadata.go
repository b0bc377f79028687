// Package metadata holds the component type and stability of the cachedprom
// exporter; it is the hand-written equivalent of what mdatagen would generate
// from ../../metadata.yaml.
package metadata // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/metadata"

import "go.opentelemetry.io/collector/component"

var (
	// Type is the configuration key of the exporter.
	Type = component.MustNewType("cachedprom")
	// ScopeName is the instrumentation scope of the exporter's own telemetry.
	ScopeName = "github.com/otelcol-red/otelcol-red/exporter/cachedprom"
)

// MetricsStability is the stability of the metrics signal.
const MetricsStability = component.StabilityLevelAlpha
