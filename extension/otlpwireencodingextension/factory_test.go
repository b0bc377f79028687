package otlpwireencodingextension

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
)

func TestDefaultConfig(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, 64<<20, cfg.MaxRequestBytes, "the wire decoder's default")
	assert.Equal(t, 49, cfg.MaxNesting, "pdata's own maximum")
}
