package gates

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/featuregate"
)

// A registered gate reads as it is set, whatever the default given; an unregistered one as
// the default.
func TestEnabledIn(t *testing.T) {
	reg := featuregate.NewRegistry()
	alpha := reg.MustRegister("test.alpha", featuregate.StageAlpha)
	reg.MustRegister("test.beta", featuregate.StageBeta)
	require.False(t, EnabledIn(reg, alpha.ID(), true), "registered alpha: off, whatever the default")
	require.True(t, EnabledIn(reg, "test.beta", false), "registered beta: on")
	require.NoError(t, reg.Set(alpha.ID(), true))
	require.True(t, EnabledIn(reg, alpha.ID(), false), "set")
	require.True(t, EnabledIn(reg, "not.registered", true))
	require.False(t, EnabledIn(reg, "not.registered", false))
	require.False(t, Enabled("not.registered.anywhere", false), "the global registry")
}
