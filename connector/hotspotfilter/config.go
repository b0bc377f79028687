package hotspotfilter // import "github.com/otelcol-red/otelcol-red/connector/hotspotfilter"

import (
	"errors"
	"fmt"
	"math"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
)

// Config configures the hotspotfilter connector.
type Config struct {
	// Rules select the spans subject to a budget. A span is judged by the
	// first rule whose services filter admits its service and whose condition
	// matches it; a span no rule matches always passes. The default is one
	// rule named "redis" for Redis client spans.
	Rules []Rule `mapstructure:"rules"`

	// MaxServices caps the services tracked per rule (and for the spans no
	// rule matches), which bounds memory when service names explode. Spans of
	// services beyond the cap share one overflow budget per rule and are
	// counted with the attribute otel.metric.overflow=true instead of
	// service.name. Default 10000; must be at least 1.
	MaxServices int `mapstructure:"max_services"`

	// ServiceExpiry forgets a service (its budget and its counters) after
	// this long without spans, freeing its place under MaxServices. Zero
	// keeps services until shutdown. Default 5m.
	ServiceExpiry time.Duration `mapstructure:"service_expiry"`

	// MetricsFlushInterval is how often the metrics output is emitted. A
	// service that went over budget within the last interval counts as hot.
	// Default 15s; must be greater than 0.
	MetricsFlushInterval time.Duration `mapstructure:"metrics_flush_interval"`
}

// Rule gives the spans it selects a budget per service.
type Rule struct {
	// Name identifies the rule in the metrics output (attribute
	// hotspotfilter.rule). Required and unique.
	Name string `mapstructure:"name"`

	// Condition is an OTTL condition in the span context, as the filter
	// processor uses; spans for which it is true are subject to the budget.
	// Required; the default rule uses
	// kind == SPAN_KIND_CLIENT and (attributes["db.system"] == "redis" or attributes["db.system.name"] == "redis").
	Condition string `mapstructure:"condition"`

	// Budget is the number of selected spans per second and per service that
	// pass without an exemption. Zero gives no budget: every selected span
	// that no exemption keeps is excess. Default 100.
	Budget float64 `mapstructure:"budget"`

	// Burst is how many selected spans a service may send at once after a
	// quiet period (the capacity of its token bucket). Zero means the budget
	// rounded up: one second's worth. Default 0.
	Burst int `mapstructure:"burst"`

	// SlowThreshold keeps every selected span lasting at least this long.
	// Zero disables the exemption. Default 10ms.
	SlowThreshold time.Duration `mapstructure:"slow_threshold"`

	// KeepErrors keeps every selected span with an error status. Default true.
	KeepErrors bool `mapstructure:"keep_errors"`

	// Services restricts the rule to some services (exact service.name
	// values). Empty lists apply the rule to every service.
	Services ServiceFilter `mapstructure:"services"`

	// SampleExcess keeps one in every SampleExcess spans over budget, so a
	// hotspot still leaves a trace of its traffic. Zero drops all excess.
	// Default 0.
	SampleExcess int `mapstructure:"sample_excess"`
}

// ServiceFilter is an allow-list and a deny-list of service names.
type ServiceFilter struct {
	// Include, when not empty, applies the rule only to these services.
	Include []string `mapstructure:"include"`
	// Exclude never applies the rule to these services; it wins over Include.
	Exclude []string `mapstructure:"exclude"`
}

var (
	_ component.Config    = (*Config)(nil)
	_ confmap.Unmarshaler = (*Rule)(nil)
)

// Unmarshal gives each rule a user writes the defaults of the default rule
// (budget, slow_threshold, keep_errors) before its own keys are applied;
// without it a rule that leaves keep_errors out would drop error spans.
func (r *Rule) Unmarshal(conf *confmap.Conf) error {
	*r = ruleDefaults()
	// confmap does not call this method again for the value it decodes into,
	// so decoding into r itself is safe.
	return conf.Unmarshal(r)
}

// Validate checks the configuration; errors name the YAML key.
func (cfg *Config) Validate() error {
	var errs []error
	if len(cfg.Rules) == 0 {
		errs = append(errs, errors.New("rules must contain at least one rule"))
	}
	names := make(map[string]int, len(cfg.Rules))
	for i := range cfg.Rules {
		r := &cfg.Rules[i]
		key := fmt.Sprintf("rules[%d]", i)
		if r.Name == "" {
			errs = append(errs, fmt.Errorf("%s.name must not be empty", key))
		} else if j, dup := names[r.Name]; dup {
			errs = append(errs, fmt.Errorf("%s.name %q is already used by rules[%d]", key, r.Name, j))
		} else {
			names[r.Name] = i
		}
		if r.Condition == "" {
			errs = append(errs, fmt.Errorf("%s.condition must not be empty", key))
		} else if _, err := parseCondition(r.Condition, component.TelemetrySettings{}); err != nil {
			errs = append(errs, fmt.Errorf("%s.condition: %w", key, err))
		}
		if r.Budget < 0 || math.IsNaN(r.Budget) || math.IsInf(r.Budget, 0) {
			errs = append(errs, fmt.Errorf("%s.budget must be a finite number greater or equal to 0", key))
		}
		if r.Burst < 0 {
			errs = append(errs, fmt.Errorf("%s.burst must be greater or equal to 0", key))
		}
		if r.SlowThreshold < 0 {
			errs = append(errs, fmt.Errorf("%s.slow_threshold must be greater or equal to 0", key))
		}
		if r.SampleExcess < 0 {
			errs = append(errs, fmt.Errorf("%s.sample_excess must be greater or equal to 0", key))
		}
		for _, s := range r.Services.Include {
			if s == "" {
				errs = append(errs, fmt.Errorf("%s.services.include must not contain an empty name", key))
				break
			}
		}
	}
	if cfg.MaxServices < 1 {
		errs = append(errs, errors.New("max_services must be greater or equal to 1"))
	}
	if cfg.ServiceExpiry < 0 {
		errs = append(errs, errors.New("service_expiry must be greater or equal to 0"))
	}
	if cfg.MetricsFlushInterval <= 0 {
		errs = append(errs, errors.New("metrics_flush_interval must be greater than 0"))
	}
	return errors.Join(errs...)
}

// burst returns the bucket capacity the rule configures.
func (r *Rule) burst() int {
	if r.Burst > 0 {
		return r.Burst
	}
	return int(math.Ceil(r.Budget))
}
