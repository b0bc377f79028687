package otlpwireencodingextension

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-red/otelcol-red/extension/otlpwireencodingextension/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		expected *Config
		errorMsg []string // each must appear in the error
	}{
		{name: "", expected: &Config{MaxRequestBytes: 64 << 20, MaxNesting: 49}},
		{name: "limits", expected: &Config{MaxRequestBytes: 1 << 20, MaxNesting: 8}},
		{name: "zero_means_default", expected: &Config{}},
		{name: "negative_max_request_bytes", errorMsg: []string{"max_request_bytes must be between 0 (default) and 2147483647, got -1"}},
		{name: "max_request_bytes_too_large", errorMsg: []string{"max_request_bytes must be between 0 (default) and 2147483647, got 2147483648"}},
		{name: "max_nesting_too_deep", errorMsg: []string{"max_nesting must be between 0 (default) and 49", "got 50"}},
		{name: "both_invalid", errorMsg: []string{"max_request_bytes must be", "got -5", "max_nesting must be", "got -1"}},
		{name: "unknown_key", errorMsg: []string{"max_message_bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub, err := cm.Sub(component.NewIDWithName(metadata.Type, tc.name).String())
			require.NoError(t, err)
			cfg := createDefaultConfig().(*Config)
			err = sub.Unmarshal(cfg)
			if err == nil {
				err = confmap.Validate(cfg)
			}
			if tc.errorMsg != nil {
				require.Error(t, err)
				for _, msg := range tc.errorMsg {
					assert.Contains(t, err.Error(), msg)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.expected, cfg)
		})
	}
}
