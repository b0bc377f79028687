package otlpwirereceiver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"

	"github.com/otelcol-red/otelcol-red/receiver/otlpwirereceiver/internal/metadata"
)

func loadConfig(t *testing.T, name string) (*Config, error) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
	require.NoError(t, err)
	cfg := createDefaultConfig().(*Config)
	if err := sub.Unmarshal(cfg); err != nil {
		return nil, err
	}
	return cfg, confmap.Validate(cfg)
}

func TestLoadConfig(t *testing.T) {
	for _, tc := range []struct {
		name     string
		check    func(t *testing.T, cfg *Config)
		errorMsg []string // each must appear in the error
	}{
		{
			name: "full",
			check: func(t *testing.T, cfg *Config) {
				grpc := cfg.Protocols.GRPC.Get()
				require.NotNil(t, grpc)
				assert.Equal(t, "0.0.0.0:14317", grpc.NetAddr.Endpoint)
				assert.Equal(t, 32, grpc.MaxRecvMsgSizeMiB)
				assert.Equal(t, 11*time.Second, grpc.Keepalive.Get().ServerParameters.Get().MaxConnectionIdle)
				assert.Equal(t, "test.crt", grpc.TLS.Get().CertFile)
				http := cfg.Protocols.HTTP.Get()
				require.NotNil(t, http)
				assert.Equal(t, "0.0.0.0:14318", http.ServerConfig.NetAddr.Endpoint)
				assert.Equal(t, "/traces", string(http.TracesURLPath), "sanitized as the otlp receiver does")
				assert.Equal(t, []string{"https://*.test.com", "https://test.com"}, http.ServerConfig.CORS.Get().AllowedOrigins)
				assert.Equal(t, "test", http.ServerConfig.Auth.Get().Config.AuthenticatorID.String())
				assert.Equal(t, 8388608, cfg.MaxRequestBytes)
				assert.Equal(t, 16, cfg.MaxNesting)
			},
		},
		{
			name: "only_grpc",
			check: func(t *testing.T, cfg *Config) {
				assert.True(t, cfg.Protocols.GRPC.HasValue())
				assert.False(t, cfg.Protocols.HTTP.HasValue())
				assert.Equal(t, "localhost:4317", cfg.Protocols.GRPC.Get().NetAddr.Endpoint)
				assert.Equal(t, defaultMaxRequestBytes, cfg.MaxRequestBytes)
				assert.Equal(t, defaultMaxNesting, cfg.MaxNesting)
			},
		},
		{
			name: "only_http_null",
			check: func(t *testing.T, cfg *Config) {
				assert.False(t, cfg.Protocols.GRPC.HasValue())
				require.True(t, cfg.Protocols.HTTP.HasValue())
				assert.Equal(t, "localhost:4318", cfg.Protocols.HTTP.Get().ServerConfig.NetAddr.Endpoint)
				assert.Equal(t, "/v1/traces", string(cfg.Protocols.HTTP.Get().TracesURLPath))
			},
		},
		{name: "no_protocols", errorMsg: []string{"protocols: must specify at least one protocol"}},
		{name: "typo", errorMsg: []string{"htttp"}},
		{name: "negative_max_request_bytes", errorMsg: []string{"max_request_bytes must be between 0 (default) and 2147483647, got -1"}},
		{name: "max_nesting_too_deep", errorMsg: []string{"max_nesting must be between 0 (default) and 49", "got 50"}},
		{name: "both_limits_invalid", errorMsg: []string{"max_request_bytes must be", "got 2147483648", "max_nesting must be", "got -3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadConfig(t, tc.name)
			if tc.errorMsg != nil {
				require.Error(t, err)
				for _, msg := range tc.errorMsg {
					assert.Contains(t, err.Error(), msg)
				}
				return
			}
			require.NoError(t, err)
			tc.check(t, cfg)
		})
	}
}

// TestRenamedOTLPConfig: a config written for the otlp receiver gives this receiver the very
// same protocol settings.
func TestRenamedOTLPConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub("otlpwire/full")
	require.NoError(t, err)
	raw := sub.ToStringMap()
	ours := createDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(raw).Unmarshal(ours))

	delete(raw, "max_request_bytes")
	delete(raw, "max_nesting")
	stock := otlpreceiver.NewFactory().CreateDefaultConfig().(*otlpreceiver.Config)
	require.NoError(t, confmap.NewFromStringMap(raw).Unmarshal(stock))
	assert.Equal(t, stock.Protocols, ours.Protocols)
}
