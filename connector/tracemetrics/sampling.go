package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"errors"
)

// SamplingConfig configures sampling weights: a span kept by a probabilistic sampler stands
// for 1/p spans (its adjusted count), and counts as that many.
type SamplingConfig struct {
	// Weighted counts each span by its adjusted count: from a valid OpenTelemetry threshold
	// in its W3C tracestate (`ot=th:…`, as spanmetrics v0.165.1 does), else from Attribute.
	// Spans without either count 1. false counts every span 1 whatever it carries (what
	// spanmetrics did up to v0.145.0). Default true.
	Weighted bool `mapstructure:"weighted"`
	// Attribute names a span attribute holding the sampling probability p in (0, 1] (a double,
	// an int or a numeric string) that a span was kept with; the span counts 1/p. It is read
	// only when the tracestate has no valid threshold. Empty (the default): not read.
	Attribute string `mapstructure:"attribute"`
	// prevent unkeyed literal initialization
	_ struct{}
}

func (c SamplingConfig) validate() error {
	if c.Attribute != "" && !c.Weighted {
		return errors.New("sampling.attribute: set, but sampling.weighted is false: the attribute would be ignored")
	}
	return nil
}
