package cachedprom

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/featuregate"
)

// keepIdentifyingResourceAttributesGate is the translator package's gate,
// read through its exported variable; tests set it by ID.
const keepIdentifyingResourceAttributesGate = "pkg.prometheus.KeepIdentifyingResourceAttributes"

// setGate sets a registered feature gate for the rest of the test, as
// --feature-gates does at startup. Tests of this package do not run in
// parallel, so no other test sees it.
func setGate(tb testing.TB, id string, on bool) {
	tb.Helper()
	reg := featuregate.GlobalRegistry()
	was, found := false, false
	reg.VisitAll(func(g *featuregate.Gate) {
		if g.ID() == id {
			was, found = g.IsEnabled(), true
		}
	})
	require.True(tb, found, "feature gate %s is registered", id)
	require.NoError(tb, reg.Set(id, on))
	tb.Cleanup(func() { require.NoError(tb, reg.Set(id, was)) })
}

// TestGatesFollowTheStockExporter: the gates are read by the stock IDs,
// registered here by the prometheus exporter's package, with its defaults.
func TestGatesFollowTheStockExporter(t *testing.T) {
	assert.Equal(t, followedGates{ignoreAddMetricSuffixes: true}, readGates(), "v0.165.1's defaults: only the beta gate is on")

	setGate(t, disableAddMetricSuffixesGate, false)
	setGate(t, disableResourceToTelemetryConversionGate, true)
	setGate(t, keepIdentifyingResourceAttributesGate, true)
	assert.Equal(t, followedGates{noResourceToTelemetry: true, keepIdentifyingResourceAttrs: true}, readGates())
}
