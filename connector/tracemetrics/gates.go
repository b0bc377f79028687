package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import "go.opentelemetry.io/collector/featuregate"

// spanmetrics v0.145.0 changes some of its output through alpha feature gates (all off by
// default). tracemetrics follows the same gates, by their spanmetrics IDs, when the binary
// registers them (otelcol-red builds spanmetrics in), so `--feature-gates=...` switches both
// connectors alike. Registering the IDs ourselves would panic next to spanmetrics, and
// registering our own IDs would make users learn a second set of flags.
const (
	legacyMetricNamesGate             = "connector.spanmetrics.legacyMetricNames"
	includeCollectorInstanceIDGate    = "connector.spanmetrics.includeCollectorInstanceID"
	useSecondAsDefaultMetricsUnitGate = "connector.spanmetrics.useSecondAsDefaultMetricsUnit"
	excludeResourceMetricsGate        = "connector.spanmetrics.excludeResourceMetrics"
	useOtelStatusCodeAttributeGate    = "spanmetrics.statusCodeConvention.useOtelPrefix"
)

// gateEnabled reports whether the gate id is registered and enabled.
func gateEnabled(id string) bool {
	enabled := false
	featuregate.GlobalRegistry().VisitAll(func(g *featuregate.Gate) {
		if g.ID() == id {
			enabled = g.IsEnabled()
		}
	})
	return enabled
}

// gates is the value of every followed gate, read once when a connector is built.
type gates struct {
	legacyMetricNames          bool
	includeCollectorInstanceID bool
	excludeResourceMetrics     bool
	useOtelStatusCode          bool
}

func readGates() gates {
	return gates{
		legacyMetricNames:          gateEnabled(legacyMetricNamesGate),
		includeCollectorInstanceID: gateEnabled(includeCollectorInstanceIDGate),
		excludeResourceMetrics:     gateEnabled(excludeResourceMetricsGate),
		useOtelStatusCode:          gateEnabled(useOtelStatusCodeAttributeGate),
	}
}
