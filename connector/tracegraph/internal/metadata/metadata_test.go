package metadata

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMetadata(t *testing.T) {
	require.Equal(t, "tracegraph", Type.String())
	require.Equal(t, component.StabilityLevelAlpha, TracesToMetricsStability)
}
