package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"errors"
	"fmt"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/reduce"
)

// SpanNameConfig rewrites the span name the metrics are keyed by (the span.name attribute), so
// that instrumentation that put a raw URL path or an ID in the span name does not make a series
// per request. All three layers are off by default: the metrics then carry span names exactly
// as spanmetrics does.
type SpanNameConfig struct {
	// FromSemanticConventions names spans as the OpenTelemetry semantic conventions do when
	// the span carries the low-cardinality attributes they name spans after (see README.md,
	// "Span names"); other spans keep their name. Default false.
	FromSemanticConventions bool `mapstructure:"from_semantic_conventions"`
	// Rules rename spans by regular expression, after from_semantic_conventions; the first
	// rule that applies to the span's service and matches its name wins. Default: none.
	Rules []SpanNameRule `mapstructure:"rules"`
	// Clustering learns templates for the names neither layer renamed (clustering.go).
	// Default: off.
	Clustering ClusteringConfig `mapstructure:"clustering"`
	// prevent unkeyed literal initialization
	_ struct{}
}

// SpanNameRule replaces a span name that Match matches (anywhere in the name, unless
// anchored) with Replace, expanded as regexp.Regexp.Expand does: $1 or ${1} is the first
// capture group, ${name} a named one, $$ a dollar sign. The whole name is replaced, not just the
// matched part.
type SpanNameRule struct {
	// Service restricts the rule to spans of this service.name (exact); empty means all.
	Service string `mapstructure:"service"`
	// Match is an RE2 regular expression (Go regexp syntax).
	Match string `mapstructure:"match"`
	// Replace is the new span name.
	Replace string `mapstructure:"replace"`
	// prevent unkeyed literal initialization
	_ struct{}
}

// validate compiles the rules; every error names the key and the rule index.
func (c *SpanNameConfig) validate() error {
	var errs []error
	for i, r := range c.Rules {
		if _, err := reduce.CompileRule(r.Service, r.Match, r.Replace); err != nil {
			errs = append(errs, fmt.Errorf("span_name.rules[%d].%w", i, err))
		}
	}
	if err := c.Clustering.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
