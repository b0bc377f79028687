// Package metadata holds the component type and stability level declared in
// ../../metadata.yaml. It is written by hand in the shape mdatagen produces, so
// the component does not need the generator to build.
package metadata // import "github.com/otelcol-red/otelcol-red/extension/gcheadroom/internal/metadata"

import "go.opentelemetry.io/collector/component"

var Type = component.MustNewType("gcheadroom")

// ScopeName names the instrumentation scope of the extension's own metrics.
const ScopeName = "github.com/otelcol-red/otelcol-red/extension/gcheadroom"

const ExtensionStability = component.StabilityLevelAlpha
