// Package metadata holds the component type and stability of the
// kafkaaffinity exporter; it is the hand-written equivalent of what mdatagen
// would generate from ../../metadata.yaml.
package metadata // import "github.com/otelcol-red/otelcol-red/exporter/kafkaaffinity/internal/metadata"

import "go.opentelemetry.io/collector/component"

var (
	// Type is the configuration key of the exporter.
	Type = component.MustNewType("kafkaaffinity")
	// ScopeName is the instrumentation scope of the exporter's own telemetry.
	ScopeName = "github.com/otelcol-red/otelcol-red/exporter/kafkaaffinity"
)

// TracesStability is the stability of the traces signal.
const TracesStability = component.StabilityLevelAlpha
