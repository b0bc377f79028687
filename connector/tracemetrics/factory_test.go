package tracemetrics

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/metadata"
)

func TestFactoryLifecycle(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	cfg := f.CreateDefaultConfig().(*Config)
	require.NoError(t, cfg.Validate())
	sink := &consumertest.MetricsSink{}
	conn, err := f.CreateTracesToMetrics(context.Background(), connectortest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, conn.Start(context.Background(), componenttest.NewNopHost()))

	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "svc")
	rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty().SetName("op")
	require.NoError(t, conn.ConsumeTraces(context.Background(), td))

	// Shutdown flushes what was consumed, then stops every goroutine (goleak checks).
	require.NoError(t, conn.Shutdown(context.Background()))
	assert.Positive(t, sink.DataPointCount(), "the final flush delivered the span's metrics")
	// A second Shutdown is harmless.
	require.NoError(t, conn.Shutdown(context.Background()))
}

func TestValidateJoinsErrors(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.MaxSeries = -1
	cfg.SeriesExpiration = -1
	cfg.Dimensions = []Dimension{{Name: "service.name"}}
	err := cfg.Validate()
	require.Error(t, err)
	for _, key := range []string{"dimensions:", "max_series:", "series_expiration:"} {
		assert.Contains(t, err.Error(), key, "every invalid key is named, not only the first")
	}
}
