package hotspotfilter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"

	"github.com/otelcol-red/otelcol-red/connector/hotspotfilter/internal/metadata"
)

func TestFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	assert.Equal(t, component.StabilityLevelAlpha, f.TracesToTracesStability())
	assert.Equal(t, component.StabilityLevelAlpha, f.TracesToMetricsStability())
	cfg := f.CreateDefaultConfig().(*Config)
	require.NoError(t, cfg.Validate())
	require.Len(t, cfg.Rules, 1)
	assert.Equal(t, defaultRuleName, cfg.Rules[0].Name)
	assert.Equal(t, defaultCondition, cfg.Rules[0].Condition)
}

func TestFactoryRejectsUnparsableCondition(t *testing.T) {
	cfg := singleRule(Rule{Condition: `attributes["db.system"] ==`})
	_, err := NewFactory().CreateTracesToTraces(context.Background(), connectortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	require.ErrorContains(t, err, `cannot parse condition of rule "redis"`)
	// A failed creation leaves nothing behind for the next one.
	c, err := NewFactory().CreateTracesToTraces(context.Background(), connectortest.NewNopSettings(metadata.Type), singleRule(Rule{}), consumertest.NewNop())
	require.NoError(t, err)
	require.NoError(t, c.Shutdown(context.Background()))
}
