package latespans // import "github.com/otelcol-red/otelcol-red/internal/latespans"

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// outcomes name what each mode does with a span outside the slack.
var outcomes = [...]string{CountNow: "counted_now", Drop: "dropped", Separate: "separate"}

// Outcome is the outcome attribute of the telemetry that counts what m did with spans (or
// edges) outside the slack.
func Outcome(m Mode) attribute.KeyValue { return attribute.String("outcome", outcomes[m]) }

// Totals are a connector's late_spans counts since it started, for its own telemetry: spans
// outside the slack by direction (Late, Early), and spans by end-time lag bucket (LagBounds,
// not cumulative). The aggregator adds a batch's or a round's Counts at once (Add); the
// observable callbacks load them when the collector's own metrics are read.
type Totals struct {
	Spans [2]atomic.Int64
	Lag   [NumLagBuckets]atomic.Int64
}

// Add adds c: an atomic add per non-zero count.
func (t *Totals) Add(c *Counts) {
	for i, n := range c.Spans {
		if n != 0 {
			t.Spans[i].Add(n)
		}
	}
	for i, n := range c.Lag {
		if n != 0 {
			t.Lag[i].Add(n)
		}
	}
}

// SpansCallback observes Spans, one point per direction from 0 (a rate() over a series that
// appears at the first late span would miss that first increase), each with the attribute
// direction and the attributes attrs (tracemetrics adds the outcome).
func (t *Totals) SpansCallback(attrs ...attribute.KeyValue) metric.Int64Callback {
	var sets [2]metric.ObserveOption
	for dir, name := range [2]string{Late: "late", Early: "early"} {
		kvs := append([]attribute.KeyValue{attribute.String("direction", name)}, attrs...)
		sets[dir] = metric.WithAttributeSet(attribute.NewSet(kvs...))
	}
	return func(_ context.Context, o metric.Int64Observer) error {
		for dir := range sets {
			o.Observe(t.Spans[dir].Load(), sets[dir])
		}
		return nil
	}
}

// LagCallback observes Lag as a histogram's cumulative buckets, one point per le, so that
// histogram_quantile over rate() by le works.
func (t *Totals) LagCallback() metric.Int64Callback {
	var sets [NumLagBuckets]metric.ObserveOption
	for i := range sets {
		sets[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("le", lagLabels[i])))
	}
	return func(_ context.Context, o metric.Int64Observer) error {
		var cum int64
		for i := range sets {
			cum += t.Lag[i].Load()
			o.Observe(cum, sets[i])
		}
		return nil
	}
}
