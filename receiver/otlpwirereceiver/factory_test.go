package otlpwirereceiver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
)

func TestDefaultConfig(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	stock := otlpreceiver.NewFactory().CreateDefaultConfig().(*otlpreceiver.Config)
	assert.Equal(t, stock.Protocols, cfg.Protocols, "the otlp receiver's defaults")
	assert.Equal(t, 64<<20, cfg.MaxRequestBytes)
	assert.Equal(t, 49, cfg.MaxNesting)
	// As the otlp receiver's, the default config names no protocol: the YAML must.
	assert.ErrorContains(t, confmap.Validate(cfg), "must specify at least one protocol")
}
