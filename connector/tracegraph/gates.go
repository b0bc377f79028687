package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import "go.opentelemetry.io/collector/featuregate"

// servicegraph v0.145.0 changes its output through feature gates. tracegraph follows them, by
// their servicegraph IDs, when the binary registers them (otelcol-red builds servicegraph in),
// so `--feature-gates=...` switches both connectors alike. Registering the IDs ourselves would
// panic next to servicegraph; our own IDs would be a second set of flags to learn.
const (
	// virtualNodeGate (beta, on by default) enables virtual nodes.
	virtualNodeGate = "connector.servicegraph.virtualNode"
	// legacyMetricNamesGate (alpha) emits the server histogram as
	// traces_service_graph_request_duration and no client histogram.
	legacyMetricNamesGate = "connector.servicegraph.legacyLatencyMetricNames"
	// legacyLatencyUnitMsGate (alpha) reports latencies in milliseconds.
	legacyLatencyUnitMsGate = "connector.servicegraph.legacyLatencyUnitMs"
)

// gates is the value of every followed gate, read once when a connector is built.
type gates struct {
	virtualNode       bool
	legacyMetricNames bool
	legacyUnitMs      bool
}

func readGates() gates {
	return gates{
		virtualNode:       gateEnabled(virtualNodeGate, true),
		legacyMetricNames: gateEnabled(legacyMetricNamesGate, false),
		legacyUnitMs:      gateEnabled(legacyLatencyUnitMsGate, false),
	}
}

// gateEnabled reports whether the gate id is enabled; unregistered, it is the gate's default
// stage in servicegraph (def).
func gateEnabled(id string, def bool) bool {
	enabled := def
	featuregate.GlobalRegistry().VisitAll(func(g *featuregate.Gate) {
		if g.ID() == id {
			enabled = g.IsEnabled()
		}
	})
	return enabled
}
