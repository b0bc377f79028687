package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"errors"
	"fmt"
	"slices"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/spanfilter"
)

// Grafana Tempo metrics-generator's span-metrics keys (modules/generator/processor/spanmetrics)
// that are not spanmetrics': their types and their validation, grouped here, one block per key.
// README.md ("Coming from Tempo") maps each of Tempo's keys to ours.

// DimensionMapping is one dimension_mappings entry: a label Name whose value is the values of
// SourceLabels joined by Join.
type DimensionMapping struct {
	// Name is the attribute added to every metric (as dimensions are).
	Name string `mapstructure:"name"`
	// SourceLabels are the attributes joined, in order, each looked up as a named dimension is
	// (span, event, resource); those absent or empty are skipped. When none has a value the
	// attribute is left out.
	SourceLabels []string `mapstructure:"source_labels"`
	// Join goes between two values. Default "" (concatenated).
	Join string `mapstructure:"join"`
	// prevent unkeyed literal initialization
	_ struct{}
}

// IntrinsicDimensions switches the built-in attributes on and off by Tempo's names. An entry
// left unset follows exclude_dimensions; setting one true while exclude_dimensions lists its
// attribute is an error.
type IntrinsicDimensions struct {
	// Service is service.name. Default: on.
	Service *bool `mapstructure:"service"`
	// SpanName is span.name. Default: on.
	SpanName *bool `mapstructure:"span_name"`
	// SpanKind is span.kind. Default: on.
	SpanKind *bool `mapstructure:"span_kind"`
	// StatusCode is status.code (otel.status_code with the
	// connector.spanmetrics.useOtelStatusCode gate on). Default: on.
	StatusCode *bool `mapstructure:"status_code"`
	// StatusMessage adds status.message, the span's status message (status_message once a
	// Prometheus exporter has replaced the dot, Tempo's label). Off by default, as in Tempo:
	// error messages often carry IDs, times or stack traces, and each distinct message is a
	// series of its own; max_series and max_series_per_service still bound them.
	StatusMessage bool `mapstructure:"status_message"`
	// prevent unkeyed literal initialization
	_ struct{}
}

// intrinsic pairs an intrinsic_dimensions entry with the built-in attribute it switches.
type intrinsic struct {
	key  string // under intrinsic_dimensions
	attr string // as exclude_dimensions names it
	on   *bool
}

func (d *IntrinsicDimensions) entries(statusAttr string) []intrinsic {
	return []intrinsic{
		{"service", series.ServiceNameKey, d.Service},
		{"span_name", series.SpanNameKey, d.SpanName},
		{"span_kind", series.SpanKindKey, d.SpanKind},
		{"status_code", statusAttr, d.StatusCode},
	}
}

// excluded returns the built-in attributes that exclude_dimensions and intrinsic_dimensions
// leave out together: what newLayout reads instead of exclude_dimensions alone.
func excludedBuiltins(c *Config, statusAttr string) []string {
	out := slices.Clone(c.ExcludeDimensions)
	for _, e := range c.IntrinsicDimensions.entries(statusAttr) {
		if e.on != nil && !*e.on && !slices.Contains(out, e.attr) {
			out = append(out, e.attr)
		}
	}
	return out
}

// validateTempoKeys checks Tempo's keys; every error names the key at fault.
func validateTempoKeys(c *Config) error {
	var errs []error
	if err := spanfilter.Validate("filter_policies", c.FilterPolicies); err != nil {
		errs = append(errs, err)
	}
	// Both spellings of the status code attribute: which one the gate picks is read when the
	// connector is built.
	for _, statusAttr := range []string{series.StatusCodeKey, series.OtelStatusCodeKey} {
		for _, e := range c.IntrinsicDimensions.entries(statusAttr) {
			if e.on != nil && *e.on && slices.Contains(c.ExcludeDimensions, e.attr) {
				errs = append(errs, fmt.Errorf("intrinsic_dimensions.%s: true, but exclude_dimensions lists %s", e.key, e.attr))
			}
		}
	}
	names := map[string]bool{}
	for _, list := range [][]Dimension{c.Dimensions, c.CallsDimensions, c.Histogram.Dimensions, c.Events.Dimensions} {
		for _, d := range list {
			if d.Name != "" {
				names[d.Name] = true
			}
		}
	}
	builtin := c.builtinKeys()
	seen := map[string]bool{}
	for i, m := range c.DimensionMappings {
		at := fmt.Sprintf("dimension_mappings[%d]", i)
		switch {
		case m.Name == "":
			errs = append(errs, fmt.Errorf("%s.name: empty", at))
		case slices.Contains(builtin, m.Name) || m.Name == series.SamplingMethodKey:
			errs = append(errs, fmt.Errorf("%s.name: %q is an attribute the connector writes itself", at, m.Name))
		case names[m.Name]:
			errs = append(errs, fmt.Errorf("%s.name: %q is also a dimension", at, m.Name))
		case seen[m.Name]:
			errs = append(errs, fmt.Errorf("%s.name: %q is mapped twice", at, m.Name))
		}
		seen[m.Name] = true
		if len(m.SourceLabels) == 0 {
			errs = append(errs, fmt.Errorf("%s.source_labels: empty, name at least one attribute", at))
		}
		for j, src := range m.SourceLabels {
			if src == "" {
				errs = append(errs, fmt.Errorf("%s.source_labels[%d]: empty attribute name", at, j))
			}
		}
	}
	dropped := map[string]bool{}
	for i, k := range c.TargetInfoExcludedDimensions {
		at := fmt.Sprintf("target_info_excluded_dimensions[%d]", i)
		switch {
		case k == "":
			errs = append(errs, fmt.Errorf("%s: empty attribute name", at))
		case k == "service.name" || k == "service.namespace" || k == "service.instance.id":
			// Prometheus exporters make job and instance of them, and Tempo never puts them
			// in target_info: leaving them out would take job and instance off every series.
			errs = append(errs, fmt.Errorf("%s: %q makes the job and instance labels and cannot be left out", at, k))
		case dropped[k]:
			errs = append(errs, fmt.Errorf("%s: %q is listed twice", at, k))
		}
		dropped[k] = true
	}
	return errors.Join(errs...)
}

// mappingDimensions returns the dimensions of dimension_mappings, which every family has.
func mappingDimensions(ms []DimensionMapping) []series.Dimension {
	var dims []series.Dimension
	for _, m := range ms {
		dims = append(dims, series.Dimension{Name: m.Name, Mapping: &series.Mapping{Sources: m.SourceLabels, Join: m.Join}})
	}
	return dims
}

// resourceDrop returns target_info_excluded_dimensions as a set; nil when empty.
func resourceDrop(keys []string) map[string]struct{} {
	if len(keys) == 0 {
		return nil
	}
	set := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		set[k] = struct{}{}
	}
	return set
}
