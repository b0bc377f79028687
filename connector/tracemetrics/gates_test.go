package tracemetrics

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/featuregate"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/gates"
)

// Every gate followed is one spanmetrics registers (the tests link spanmetrics in, as the
// binary does), and the default assumed for a binary without spanmetrics is spanmetrics' own:
// a gate that changes stage upstream fails here until gateDefaults follows.
func TestGatesFollowSpanmetrics(t *testing.T) {
	registered := map[string]bool{}
	featuregate.GlobalRegistry().VisitAll(func(g *featuregate.Gate) {
		registered[g.ID()] = g.IsEnabled()
	})
	for id, def := range gateDefaults {
		enabled, ok := registered[id]
		require.True(t, ok, "spanmetrics registers %s", id)
		require.Equal(t, def, enabled, "default of %s", id)
		require.Equal(t, def, gateEnabled(id))
	}
	require.True(t, readGates().includeCollectorInstanceID, "on by default since spanmetrics v0.165.1")
}

// Without spanmetrics in the binary the gates are not registered, and each takes spanmetrics'
// default: the collector instance ID on, the alpha gates off.
func TestUnregisteredGatesTakeSpanmetricsDefaults(t *testing.T) {
	empty := featuregate.NewRegistry()
	require.True(t, gates.EnabledIn(empty, includeCollectorInstanceIDGate, gateDefaults[includeCollectorInstanceIDGate]))
	for _, id := range []string{legacyMetricNamesGate, useSecondAsDefaultMetricsUnitGate, excludeResourceMetricsGate, useOtelStatusCodeAttributeGate} {
		require.False(t, gates.EnabledIn(empty, id, gateDefaults[id]), id)
	}
	require.False(t, gates.EnabledIn(empty, "not.a.gate", gateDefaults["not.a.gate"]))
}

// With the gate disabled (`--feature-gates=-connector.spanmetrics.includeCollectorInstanceID`)
// neither connector adds collector.instance.id, and the outputs agree.
func TestCollectorInstanceIDGateOff(t *testing.T) {
	setGate(t, includeCollectorInstanceIDGate, false)
	raw := map[string]any{
		"metrics_flush_interval": 15 * time.Second,
		"dimensions":             dims("http.method"),
	}
	compareRun(t, raw, genOptions{services: 2, names: 4}, 2, 2, 100, true)
	raw["max_series"] = 20 // cap overflow series too
	r := startConnector(t, NewFactory(), raw)
	r.consume(genTraces(newRand(3), 200, genOptions{services: 2, names: 40}))
	md := r.flush()
	n, overflow := 0, 0
	for _, rm := range md.ResourceMetrics().All() {
		for _, m := range rm.ScopeMetrics().At(0).Metrics().All() {
			for attrs := range dataPointAttributes(m) {
				_, ok := attrs.Get(series.CollectorInstanceKey)
				require.False(t, ok, "collector.instance.id on %s", attrString(attrs))
				if _, ok := attrs.Get(series.OverflowKey); ok {
					overflow++
				}
				n++
			}
		}
	}
	require.Positive(t, n)
	require.Positive(t, overflow, "cap overflow series are checked too")
}

// setGate sets gate id for the rest of the test; connectors read it when they are built.
func setGate(t *testing.T, id string, enabled bool) {
	t.Helper()
	was := gateEnabled(id)
	require.NoError(t, featuregate.GlobalRegistry().Set(id, enabled))
	t.Cleanup(func() { require.NoError(t, featuregate.GlobalRegistry().Set(id, was)) })
}
