package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import "github.com/otelcol-red/otelcol-red/internal/gates"

// spanmetrics v0.165.1 changes some of its output through feature gates. tracemetrics follows
// the same gates, by their spanmetrics IDs, when the binary registers them (otelcol-red builds
// spanmetrics in), so `--feature-gates=...` switches both connectors alike (internal/gates has
// why not IDs of our own).
const (
	legacyMetricNamesGate             = "connector.spanmetrics.legacyMetricNames"
	includeCollectorInstanceIDGate    = "connector.spanmetrics.includeCollectorInstanceID"
	useSecondAsDefaultMetricsUnitGate = "connector.spanmetrics.useSecondAsDefaultMetricsUnit"
	excludeResourceMetricsGate        = "connector.spanmetrics.excludeResourceMetrics"
	useOtelStatusCodeAttributeGate    = "spanmetrics.statusCodeConvention.useOtelPrefix"
)

// gateDefaults is each gate's default in spanmetrics v0.165.1, used when the binary does not
// register the gate: includeCollectorInstanceID is beta there (on unless disabled), the
// others alpha (off unless enabled). A build without spanmetrics then gives spanmetrics'
// default output rather than the output of every gate off.
var gateDefaults = map[string]bool{
	legacyMetricNamesGate:             false,
	includeCollectorInstanceIDGate:    true,
	useSecondAsDefaultMetricsUnitGate: false,
	excludeResourceMetricsGate:        false,
	useOtelStatusCodeAttributeGate:    false,
}

// gateEnabled reports whether the gate id is enabled, or, when the binary does not register
// it, whether spanmetrics enables it by default.
func gateEnabled(id string) bool { return gates.Enabled(id, gateDefaults[id]) }

// followedGates is the value of every followed gate, read once when a connector is built.
type followedGates struct {
	legacyMetricNames          bool
	includeCollectorInstanceID bool
	excludeResourceMetrics     bool
	useOtelStatusCode          bool
}

func readGates() followedGates {
	return followedGates{
		legacyMetricNames:          gateEnabled(legacyMetricNamesGate),
		includeCollectorInstanceID: gateEnabled(includeCollectorInstanceIDGate),
		excludeResourceMetrics:     gateEnabled(excludeResourceMetricsGate),
		useOtelStatusCode:          gateEnabled(useOtelStatusCodeAttributeGate),
	}
}
