package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"errors"
	"fmt"
	"time"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// late_spans.policy values.
const (
	lateCountNow = "count_now"
	lateDrop     = "drop"
	lateSeparate = "separate"
)

// Defaults of late_spans: Tempo's metrics_ingestion_time_range_slack (30s, both ways), which
// also covers the SDK's and the agent's batching delays measured on the Kafka tier (README.md,
// "Late spans").
const (
	defaultLateSlack       = 30 * time.Second
	defaultLateFutureSlack = 30 * time.Second
)

// LateSpansConfig is late_spans: what the connector does with a span whose end time is far
// from the time it is reduced, as after a Kafka backlog is drained. A span is late when it
// ended more than Slack before, early when it ends more than FutureSlack after (a skewed
// clock). Spans on time are counted as always.
type LateSpansConfig struct {
	// Policy is what late and early spans become: count_now (the default, and spanmetrics'
	// behaviour: counted as if they ended now), drop (left out of the metrics, counted in the
	// connector's late_spans telemetry with outcome dropped), or separate (counted in series of
	// their own, marked late="true"; the series of spans on time do not carry the label).
	// Empty means count_now.
	Policy string `mapstructure:"policy"`
	// Slack is how far behind the time it is reduced a span's end time may be before the span
	// is late. 0 means the default, 30s.
	Slack time.Duration `mapstructure:"slack"`
	// FutureSlack is how far ahead of that time a span's end time may be before the span is
	// early (clock skew). 0 means the default, 30s.
	FutureSlack time.Duration `mapstructure:"future_slack"`
}

func (c *LateSpansConfig) validate() error {
	var errs []error
	switch c.Policy {
	case "", lateCountNow, lateDrop, lateSeparate:
	default:
		errs = append(errs, fmt.Errorf("late_spans.policy: %q, use %q, %q or %q", c.Policy, lateCountNow, lateDrop, lateSeparate))
	}
	if c.Slack < 0 {
		errs = append(errs, fmt.Errorf("late_spans.slack: %v, must be positive or 0 (default %v)", c.Slack, defaultLateSlack))
	}
	if c.FutureSlack < 0 {
		errs = append(errs, fmt.Errorf("late_spans.future_slack: %v, must be positive or 0 (default %v)", c.FutureSlack, defaultLateFutureSlack))
	}
	return errors.Join(errs...)
}

// policy is the plan's part of late_spans.
func (c *LateSpansConfig) policy() series.LatePolicy {
	p := series.LatePolicy{Behind: int64(defaultLateSlack), Ahead: int64(defaultLateFutureSlack)}
	if c.Slack > 0 {
		p.Behind = int64(c.Slack)
	}
	if c.FutureSlack > 0 {
		p.Ahead = int64(c.FutureSlack)
	}
	switch c.Policy {
	case lateDrop:
		p.Mode = series.LateDrop
	case lateSeparate:
		p.Mode = series.LateSeparate
	}
	return p
}
