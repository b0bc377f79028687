package latespans // import "github.com/otelcol-red/otelcol-red/internal/latespans"

import (
	"errors"
	"fmt"
	"time"
)

// late_spans.policy values.
const (
	PolicyCountNow = "count_now"
	PolicyDrop     = "drop"
	PolicySeparate = "separate"
)

// Defaults of late_spans: Tempo's metrics_ingestion_time_range_slack (30s, both ways), which
// also covers the SDK's and the agent's batching delays measured on the Kafka tier
// (connector/tracemetrics/README.md, "Late spans").
const (
	DefaultSlack       = 30 * time.Second
	DefaultFutureSlack = 30 * time.Second
)

// Config is late_spans: what a connector does with a span whose end time is far from the time
// it is reduced, as after a Kafka backlog is drained. A span is late when it ended more than
// Slack before, early when it ends more than FutureSlack after (a skewed clock). Spans on time
// are counted as always.
type Config struct {
	// Policy is what late and early spans (in tracegraph, the edges they belong to) become:
	// count_now (the default, and the stock connectors' behaviour: counted as if they ended
	// now), drop (left out of the metrics, counted in the connector's own telemetry with
	// outcome dropped), or separate (counted in series of their own, marked late="true"; the
	// series on time do not carry the label). Empty means count_now.
	Policy string `mapstructure:"policy"`
	// Slack is how far behind the time it is reduced a span's end time may be before the span
	// is late. 0 means the default, 30s.
	Slack time.Duration `mapstructure:"slack"`
	// FutureSlack is how far ahead of that time a span's end time may be before the span is
	// early (clock skew). 0 means the default, 30s.
	FutureSlack time.Duration `mapstructure:"future_slack"`
}

// DefaultConfig is late_spans as a connector's default configuration writes it.
func DefaultConfig() Config {
	return Config{Policy: PolicyCountNow, Slack: DefaultSlack, FutureSlack: DefaultFutureSlack}
}

// Validate returns every error of c, each naming its YAML key under key, the path of late_spans
// in the connector's configuration ("late_spans.policy: ..."). It takes the key, and so is not
// the collector's Validate() that the configuration walk calls on its own, because a
// connector's Config.Validate joins it with its other errors as the repository's convention
// writes them.
func (c *Config) Validate(key string) error {
	var errs []error
	switch c.Policy {
	case "", PolicyCountNow, PolicyDrop, PolicySeparate:
	default:
		errs = append(errs, fmt.Errorf("%s.policy: %q, use %q, %q or %q", key, c.Policy, PolicyCountNow, PolicyDrop, PolicySeparate))
	}
	if c.Slack < 0 {
		errs = append(errs, fmt.Errorf("%s.slack: %v, must be positive or 0 (default %v)", key, c.Slack, DefaultSlack))
	}
	if c.FutureSlack < 0 {
		errs = append(errs, fmt.Errorf("%s.future_slack: %v, must be positive or 0 (default %v)", key, c.FutureSlack, DefaultFutureSlack))
	}
	return errors.Join(errs...)
}

// Resolve returns the policy the stages apply: the mode, the slacks in ns with 0 replaced by
// the defaults. c is assumed valid.
func (c *Config) Resolve() Policy {
	p := Policy{Behind: int64(DefaultSlack), Ahead: int64(DefaultFutureSlack)}
	if c.Slack > 0 {
		p.Behind = int64(c.Slack)
	}
	if c.FutureSlack > 0 {
		p.Ahead = int64(c.FutureSlack)
	}
	switch c.Policy {
	case PolicyDrop:
		p.Mode = Drop
	case PolicySeparate:
		p.Mode = Separate
	}
	return p
}
