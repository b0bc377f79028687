package reduce // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/reduce"

import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

// lateOf decides what late_spans does with a span that ends at end (unix ns), in a batch
// reduced at now: it counts the span's lag in the batch's histogram and, when the span is
// outside the slack, in the batch's late or early count. It returns whether the span is kept
// (false: dropped) and whether it is counted apart (marked late). The span's end is read
// once, with the fields reduceSpan reads anyway, and the batch's time once per request, so
// the policy costs a subtraction, a few compares and two adds per span.
func lateOf(p *series.LatePolicy, c *series.LateCounts, now int64, end uint64) (keep, apart bool) {
	lag := now - int64(end)
	c.Lag[series.LagBucket(lag)]++
	var dir int
	switch {
	case lag > p.Behind:
		dir = series.Late
	case -lag > p.Ahead:
		dir = series.Early
	default:
		return true, false
	}
	c.Spans[dir]++
	switch p.Mode {
	case series.LateDrop:
		return false, false
	case series.LateSeparate:
		return true, true
	}
	return true, false
}
