// Package latespans is the late-span policy both trace connectors apply (late_spans): a span
// whose end time is further behind the time its request is reduced than the slack (late), or
// further ahead of it than the future slack (early), is counted as now, dropped, or counted in
// a separate series marked late="true", by the policy. The reducer judges each span against
// its batch's time (one clock read per request) with Policy.Outside, which counts what it saw
// in the batch (Counts); the aggregator adds a batch's counts to the telemetry's atomics
// (Totals) at once, so the hot path touches neither the OTel API nor an atomic.
//
// What a connector does with a span outside the slack stays in the connector: tracemetrics
// drops it or marks its series key, tracegraph marks the edge, which the aggregator drops,
// counts or labels when it records it.
package latespans // import "github.com/otelcol-red/otelcol-red/internal/latespans"

import "strconv"

// Mode is late_spans.policy, resolved.
type Mode uint8

const (
	// CountNow counts late and early spans as if they ended now (spanmetrics' and
	// servicegraph's behaviour).
	CountNow Mode = iota
	// Drop leaves them out of the metrics; the telemetry counts them.
	Drop
	// Separate counts them in series of their own, marked late="true".
	Separate
)

// Policy is late_spans as the stages apply it (Config.Resolve).
type Policy struct {
	Mode   Mode
	Behind int64 // slack in ns: a span ending earlier than the batch's time less this is late
	Ahead  int64 // future_slack in ns: a span ending later than the batch's time plus this is early
}

// Directions of Counts.Spans and Totals.Spans.
const (
	Late  = 0 // ended more than the slack before the batch's time
	Early = 1 // ends more than the future slack after it
)

// LagBounds are the upper bounds, in seconds, of the end-time lag histogram (the batch's time
// less the span's end time; negative for a span that ends in the future). The last bucket,
// +Inf, follows them. One set for both connectors, so that one dashboard panel reads both.
var LagBounds = [...]float64{-60, -5, 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

// NumLagBuckets is the number of buckets of the lag histogram, +Inf included.
const NumLagBuckets = len(LagBounds) + 1

// lagBoundsNs is LagBounds in ns, searched per span.
var lagBoundsNs = func() (b [len(LagBounds)]int64) {
	for i, s := range LagBounds {
		b[i] = int64(s * 1e9)
	}
	return b
}()

// lagLabels are LagBounds as the le attribute writes them, +Inf last.
var lagLabels = func() (l [NumLagBuckets]string) {
	for i, s := range LagBounds {
		l[i] = strconv.FormatFloat(s, 'g', -1, 64)
	}
	l[len(LagBounds)] = "+Inf"
	return l
}()

// LagBucket returns the bucket of a lag of lag ns. Most spans arrive within a second of their
// end, so the search usually stops at the third bound.
func LagBucket(lag int64) int {
	for i, b := range lagBoundsNs {
		if lag <= b {
			return i
		}
	}
	return len(lagBoundsNs)
}

// Counts is what a batch saw of its spans' end times: spans outside the slack by direction (all
// handled by the one configured policy), and every span judged by lag bucket (not cumulative).
type Counts struct {
	Spans [2]int64
	Lag   [NumLagBuckets]int64
}

// Add adds o to c.
func (c *Counts) Add(o *Counts) {
	for i := range c.Spans {
		c.Spans[i] += o.Spans[i]
	}
	for i := range c.Lag {
		c.Lag[i] += o.Lag[i]
	}
}

// Any reports whether c counted anything.
func (c *Counts) Any() bool {
	return c.Spans != [2]int64{} || c.Lag != [NumLagBuckets]int64{}
}

// Outside counts the lag of a span that ends at end (unix ns), in a batch reduced at now, into
// c and reports whether the span is outside the slack (counted in c's late or early count).
// The span's end is the one the reducer reads anyway, the batch's time is read once per
// request, so the policy costs a subtraction, a few compares and two adds per span; Outside is
// small enough to be inlined into the reducers' loops (go build -gcflags=-m) and allocates
// nothing.
func (p *Policy) Outside(c *Counts, now int64, end uint64) bool {
	lag := now - int64(end)
	c.Lag[LagBucket(lag)]++
	switch {
	case lag > p.Behind:
		c.Spans[Late]++
	case -lag > p.Ahead:
		c.Spans[Early]++
	default:
		return false
	}
	return true
}
