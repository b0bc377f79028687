package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

// span_name's configuration: its rules and clustering, each with its validation.

import (
	"errors"
	"fmt"
	"time"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/clustering"
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
	// Clustering learns templates for the names neither layer renamed (ClusteringConfig).
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

// ClusteringConfig learns span-name templates from the names each service sends, after
// from_semantic_conventions and rules, for the spans neither renamed (internal/clustering):
// words that look like IDs become {id}, and a position of the name that shows more than
// MaxChildren distinct words becomes {*}. Off by default.
type ClusteringConfig struct {
	// Enabled turns clustering on. Default false.
	Enabled bool `mapstructure:"enabled"`
	// DryRun, with Enabled, learns and counts the spans clustering would rename
	// (dry_run_renamed_spans) but keys series by the names as they are; without Enabled
	// nothing runs. Default false.
	DryRun bool `mapstructure:"dry_run"`
	// MaxChildren is how many distinct words one position of a service's names keeps before
	// they are merged into {*} (the first word, the operation, is never merged). Default 50.
	MaxChildren int `mapstructure:"max_children"`
	// MaxTemplatesPerService bounds the templates learned per service; beyond it the least
	// recently learned template not seen since goes. Default 500.
	MaxTemplatesPerService int `mapstructure:"max_templates_per_service"`
	// TemplateExpiration forgets a template not seen for this long; 0 means never (the
	// bound above still holds). Default 1h.
	TemplateExpiration time.Duration `mapstructure:"template_expiration"`
	// prevent unkeyed literal initialization
	_ struct{}
}

const (
	defaultClusteringMaxChildren  = 50
	defaultClusteringMaxTemplates = 500
	defaultTemplateExpiration     = time.Hour
	maxClusteringChildren         = 10_000
	maxClusteringTemplates        = 100_000
)

func defaultClusteringConfig() ClusteringConfig {
	return ClusteringConfig{
		MaxChildren:            defaultClusteringMaxChildren,
		MaxTemplatesPerService: defaultClusteringMaxTemplates,
		TemplateExpiration:     defaultTemplateExpiration,
	}
}

// validate names the key at fault.
func (c *ClusteringConfig) validate() error {
	var errs []error
	if c.MaxChildren < 1 || c.MaxChildren > maxClusteringChildren {
		errs = append(errs, fmt.Errorf("span_name.clustering.max_children: %d, must be 1..%d", c.MaxChildren, maxClusteringChildren))
	}
	if c.MaxTemplatesPerService < 1 || c.MaxTemplatesPerService > maxClusteringTemplates {
		errs = append(errs, fmt.Errorf("span_name.clustering.max_templates_per_service: %d, must be 1..%d", c.MaxTemplatesPerService, maxClusteringTemplates))
	}
	if c.TemplateExpiration < 0 {
		errs = append(errs, fmt.Errorf("span_name.clustering.template_expiration: %v, must be positive or 0 (never)", c.TemplateExpiration))
	}
	return errors.Join(errs...)
}

func (c *ClusteringConfig) clusterer() *clustering.Clusterer {
	if !c.Enabled {
		return nil
	}
	return clustering.New(clustering.Config{
		MaxChildren:            c.MaxChildren,
		MaxTemplatesPerService: c.MaxTemplatesPerService,
		TemplateExpiration:     c.TemplateExpiration,
	})
}
