package elasticsearch

import (
	"context"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/elasticsearchexporter"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/exporter/xexporter"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The reason this package exists: upstream's default config does not validate on this core.
// When this starts to fail, the held release has caught up with the core and the package can go.
func TestUpstreamDefaultFailsOnThisCore(t *testing.T) {
	cfg := elasticsearchexporter.NewFactory().CreateDefaultConfig()
	assert.ErrorContains(t, confmap.Validate(cfg), "idle_timeout")
}

func TestDefaultConfigValidates(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*elasticsearchexporter.Config)
	cfg.Endpoints = []string{"http://127.0.0.1:9200"}
	require.NoError(t, confmap.Validate(cfg))
	p := cfg.QueueBatchConfig.Get().Batch.Get().Partition
	assert.Equal(t, 90*time.Second, p.IdleTimeout)
	assert.Equal(t, 10000, p.CacheSize)
}

func TestUserKeysWin(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig()
	conf := confmap.NewFromStringMap(map[string]any{
		"endpoint": "http://127.0.0.1:9200",
		"sending_queue": map[string]any{
			"batch": map[string]any{
				"flush_timeout": "1s",
				"sizer":         "items",
				"min_size":      1000,
				"max_size":      5000,
				"partition":     map[string]any{"idle_timeout": "5s"},
			},
		},
	})
	require.NoError(t, conf.Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	b := cfg.(*elasticsearchexporter.Config).QueueBatchConfig.Get().Batch.Get()
	assert.Equal(t, 5*time.Second, b.Partition.IdleTimeout, "the user's key")
	assert.Equal(t, 10000, b.Partition.CacheSize, "the default the user did not override")
	assert.Equal(t, time.Second, b.FlushTimeout)

	// A value the core refuses is still refused, naming the key.
	bad := NewFactory().CreateDefaultConfig()
	require.NoError(t, confmap.NewFromStringMap(map[string]any{
		"endpoint":      "http://127.0.0.1:9200",
		"sending_queue": map[string]any{"batch": map[string]any{"partition": map[string]any{"cache_size": -1}}},
	}).Unmarshal(bad))
	assert.ErrorContains(t, confmap.Validate(bad), "cache_size")
}

func TestSameComponentAsUpstream(t *testing.T) {
	up := elasticsearchexporter.NewFactory().(xexporter.Factory)
	f := NewFactory().(xexporter.Factory)
	assert.Equal(t, component.MustNewType("elasticsearch"), f.Type())
	assert.Equal(t, up.TracesStability(), f.TracesStability())
	assert.Equal(t, up.MetricsStability(), f.MetricsStability())
	assert.Equal(t, up.LogsStability(), f.LogsStability())
	assert.Equal(t, up.ProfilesStability(), f.ProfilesStability())

	cfg := f.CreateDefaultConfig().(*elasticsearchexporter.Config)
	cfg.Endpoints = []string{"http://127.0.0.1:1"}
	exp, err := f.CreateTraces(context.Background(), exportertest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Shutdown(context.Background()))
}
