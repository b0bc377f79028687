package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"errors"
	"fmt"
	"time"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/clustering"
)

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
