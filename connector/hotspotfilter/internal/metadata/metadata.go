// Package metadata holds the component type and stability levels declared in
// ../../metadata.yaml. It is written by hand in the shape mdatagen produces, so
// the component does not need the generator to build.
package metadata // import "github.com/otelcol-red/otelcol-red/connector/hotspotfilter/internal/metadata"

import "go.opentelemetry.io/collector/component"

var Type = component.MustNewType("hotspotfilter")

// ScopeName names the instrumentation scope of the metrics the connector emits.
const ScopeName = "github.com/otelcol-red/otelcol-red/connector/hotspotfilter"

const (
	TracesToTracesStability  = component.StabilityLevelAlpha
	TracesToMetricsStability = component.StabilityLevelAlpha
)
