package gcheadroom

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

func TestDefaultConfigIsValid(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, int64(64), cfg.MaxHeadroomMiB)
	assert.Equal(t, int64(32), cfg.MinHeadroomMiB)
	assert.Equal(t, 10, cfg.MinGCPercent)
	assert.Equal(t, time.Second, cfg.CheckInterval)
}

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	cfg := createDefaultConfig()
	require.NoError(t, cm.Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, int64(512), cfg.MaxHeadroomMiB)
	assert.Equal(t, int64(48), cfg.MinHeadroomMiB)
	assert.Equal(t, 40, cfg.MinGCPercent)
	assert.Equal(t, 2*time.Second, cfg.CheckInterval)
}

func TestValidateNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{"no headroom", func(c *Config) { c.MaxHeadroomMiB = 0 }, "max_headroom_mib: 0, must be at least 1"},
		{"negative headroom", func(c *Config) { c.MaxHeadroomMiB = -5 }, "max_headroom_mib: -5"},
		{"negative least headroom", func(c *Config) { c.MinHeadroomMiB = -1 }, "min_headroom_mib: -1, must be at least 0"},
		{"percent 0", func(c *Config) { c.MinGCPercent = 0 }, "min_gc_percent: 0, must be 1..100"},
		{"percent above GOGC's default", func(c *Config) { c.MinGCPercent = 101 }, "min_gc_percent: 101"},
		{"interval too short", func(c *Config) { c.CheckInterval = time.Millisecond }, "check_interval: 1ms, must be at least 10ms"},
		{"negative memory percentage", func(c *Config) { c.MemoryLimitPercentage = -1 }, "memory_limit_percentage: -1, must be 0..100"},
		{"memory percentage above 100", func(c *Config) { c.MemoryLimitPercentage = 101 }, "memory_limit_percentage: 101, must be 0..100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := createDefaultConfig()
			tc.modify(cfg)
			err := confmap.Validate(cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
