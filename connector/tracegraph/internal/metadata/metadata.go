// Package metadata holds the component type and stability, as mdatagen would generate them
// from metadata.yaml (written by hand here to keep the tool out of the build).
package metadata // import "github.com/otelcol-red/otelcol-red/connector/tracegraph/internal/metadata"

import "go.opentelemetry.io/collector/component"

var (
	// Type is the component type, the key in a collector configuration.
	Type = component.MustNewType("tracegraph")
	// ScopeName is the instrumentation scope of the connector's own telemetry.
	ScopeName = "github.com/otelcol-red/otelcol-red/connector/tracegraph"
)

// TracesToMetricsStability is the stability of the traces → metrics connection.
const TracesToMetricsStability = component.StabilityLevelAlpha
