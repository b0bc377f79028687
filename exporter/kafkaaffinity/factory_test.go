package kafkaaffinity

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/exporter/kafkaaffinity/internal/metadata"
)

func TestFactoryLifecycle(t *testing.T) {
	c := fakeCluster(t)
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	cfg := f.CreateDefaultConfig().(*Config)
	require.NoError(t, componenttest.CheckConfigStruct(cfg))
	cfg.Brokers = c.ListenAddrs()
	cfg.HotKeys.SpansPerSecond = 1000

	exp, err := f.CreateTraces(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	td := ptrace.NewTraces()
	addResource(td, "a", 5, 5)
	require.NoError(t, exp.ConsumeTraces(context.Background(), td))
	// Shutdown drains the queue, stops the rate ticker and closes the client;
	// goleak checks nothing is left.
	require.NoError(t, exp.Shutdown(context.Background()))
	readAll(t, cfg.Brokers, 5)
}
