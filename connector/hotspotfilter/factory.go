// Package hotspotfilter provides a connector that drops the excess of fast,
// successful spans (Redis client spans by default) from services that emit
// them faster than a per-service budget, keeps the spans worth reading, and
// reports what it dropped on a metrics output.
package hotspotfilter // import "github.com/otelcol-red/otelcol-red/connector/hotspotfilter"

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"

	"github.com/otelcol-red/otelcol-red/connector/hotspotfilter/internal/metadata"
)

const (
	// defaultRuleName names the rule of the default configuration.
	defaultRuleName = "redis"
	// defaultCondition selects Redis client spans under both the old
	// (db.system) and the current (db.system.name) semantic conventions.
	defaultCondition = `kind == SPAN_KIND_CLIENT and (attributes["db.system"] == "redis" or attributes["db.system.name"] == "redis")`
	// defaultBudget is the number of selected spans per second and per
	// service that pass without an exemption.
	defaultBudget = 100.0
	// defaultSlowThreshold matches Redis' own slowlog default
	// (slowlog-log-slower-than 10000 µs): a command this slow is worth a span.
	defaultSlowThreshold = 10 * time.Millisecond
	// defaultKeepErrors keeps every span with an error status.
	defaultKeepErrors = true
	// defaultMaxServices bounds the services tracked per rule.
	defaultMaxServices = 10000
	// defaultServiceExpiry forgets services idle this long, so the cap holds
	// the services that are active now.
	defaultServiceExpiry = 5 * time.Minute
	// defaultMetricsFlushInterval is how often the metrics output is emitted
	// and the window in which a service over budget counts as hot.
	defaultMetricsFlushInterval = 15 * time.Second
)

// NewFactory returns the factory of the hotspotfilter connector.
func NewFactory() connector.Factory { return newFactory(clockwork.NewRealClock()) }

// newFactory returns a factory whose connectors read the time from clock.
func newFactory(clock clockwork.Clock) connector.Factory {
	return connector.NewFactory(
		metadata.Type,
		createDefaultConfig,
		connector.WithTracesToTraces(func(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Traces) (connector.Traces, error) {
			f, err := filters.acquire(set, cfg.(*Config), clock)
			if err != nil {
				return nil, err
			}
			f.setTracesNext(next)
			return &tracesConnector{filter: f}, nil
		}, metadata.TracesToTracesStability),
		connector.WithTracesToMetrics(func(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Traces, error) {
			f, err := filters.acquire(set, cfg.(*Config), clock)
			if err != nil {
				return nil, err
			}
			f.setMetricsNext(next)
			return &metricsConnector{filter: f}, nil
		}, metadata.TracesToMetricsStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{
		Rules:                []Rule{defaultRule()},
		MaxServices:          defaultMaxServices,
		ServiceExpiry:        defaultServiceExpiry,
		MetricsFlushInterval: defaultMetricsFlushInterval,
	}
}

// defaultRule is the default configuration's only rule. Its fields other than
// name and condition are also the defaults of every rule a user writes.
func defaultRule() Rule {
	r := ruleDefaults()
	r.Name = defaultRuleName
	r.Condition = defaultCondition
	return r
}

func ruleDefaults() Rule {
	return Rule{
		Budget:        defaultBudget,
		SlowThreshold: defaultSlowThreshold,
		KeepErrors:    defaultKeepErrors,
	}
}
