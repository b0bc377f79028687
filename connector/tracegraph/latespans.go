package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// late_spans: what becomes of an edge whose spans end far from the time they are reduced, as
// after a Kafka backlog is drained. The same keys and meaning as tracemetrics' late_spans; an
// edge is late when either of its spans is (each is judged against its own request's time).

// late_spans.policy values.
const (
	lateCountNow = "count_now"
	lateDrop     = "drop"
	lateSeparate = "separate"
)

// Defaults of late_spans: Tempo's metrics_ingestion_time_range_slack, 30s both ways.
const (
	defaultLateSlack       = 30 * time.Second
	defaultLateFutureSlack = 30 * time.Second
)

// LateSpansConfig is late_spans.
type LateSpansConfig struct {
	// Policy is what an edge with a late or early span becomes: count_now (the default, and
	// servicegraph's behaviour: counted as now), drop (left out of the metrics, counted in the
	// connector's late_edges telemetry with outcome dropped), or separate (counted in series of
	// their own, marked late="true"; the series of edges on time do not carry the label).
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

// lateMode is late_spans.policy, as the aggregator applies it to a late edge.
type lateMode uint8

const (
	lateModeCountNow lateMode = iota
	lateModeDrop
	lateModeSeparate
)

// lateOutcomes name what each mode does, the outcome attribute of the telemetry.
var lateOutcomes = [...]string{lateModeCountNow: "counted_now", lateModeDrop: "dropped", lateModeSeparate: "separate"}

// latePolicy is the plan's part of late_spans.
type latePolicy struct {
	mode   lateMode
	behind int64 // ns: a span ending earlier than the batch's time less this is late
	ahead  int64 // ns: a span ending later than the batch's time plus this is early
}

func (c *LateSpansConfig) policy() latePolicy {
	p := latePolicy{behind: int64(defaultLateSlack), ahead: int64(defaultLateFutureSlack)}
	if c.Slack > 0 {
		p.behind = int64(c.Slack)
	}
	if c.FutureSlack > 0 {
		p.ahead = int64(c.FutureSlack)
	}
	switch c.Policy {
	case lateDrop:
		p.mode = lateModeDrop
	case lateSeparate:
		p.mode = lateModeSeparate
	}
	return p
}

// lateLabel, or'ed into an edge series key's label slot, marks a series of late edges
// (separate): part of the identity, so late and on-time requests of an edge never merge.
const lateLabel = 1 << 8

// Directions of lateCounts.spans.
const (
	dirLate  = 0
	dirEarly = 1
)

// lagBounds are the upper bounds, in seconds, of the end-time lag histogram (the batch's time
// less the span's end time, negative for a span ending in the future); +Inf follows. The same
// as tracemetrics', so that one dashboard panel reads both.
var lagBounds = [...]float64{-60, -5, 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

var lagBoundsNs = func() (b [len(lagBounds)]int64) {
	for i, s := range lagBounds {
		b[i] = int64(s * 1e9)
	}
	return b
}()

const numLagBuckets = len(lagBounds) + 1

// lagLabels are lagBounds as the le attribute writes them, +Inf last.
var lagLabels = func() (l [numLagBuckets]string) {
	for i, s := range lagBounds {
		l[i] = strconv.FormatFloat(s, 'g', -1, 64)
	}
	l[len(lagBounds)] = "+Inf"
	return l
}()

// lateCounts is what a batch saw of its edge spans' end times: spans outside the slack by
// direction, and every edge span by lag bucket (not cumulative). Added to the telemetry's
// atomics by the aggregator, once per batch.
type lateCounts struct {
	spans [2]int64
	lag   [numLagBuckets]int64
}

// lateOf counts the lag of an edge span that ends at end (unix ns), in a batch reduced at now,
// and reports whether the span is outside the slack. The span's end is read with the times
// reduceSpan reads anyway, the batch's time once per request.
func lateOf(p *latePolicy, c *lateCounts, now int64, end uint64) bool {
	lag := now - int64(end)
	i := 0
	for i < len(lagBoundsNs) && lag > lagBoundsNs[i] {
		i++
	}
	c.lag[i]++
	switch {
	case lag > p.behind:
		c.spans[dirLate]++
	case -lag > p.ahead:
		c.spans[dirEarly]++
	default:
		return false
	}
	return true
}
