package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"github.com/otelcol-red/otelcol-red/internal/sampling"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
)

// attributeWeight returns the adjusted count of a span from sampling.attribute (Tempo's
// span_multiplier_key), the sampling probability p it was kept with, read on the span, then on
// its resource, as Tempo reads it: 1/p, or 1 when neither has the attribute. A value that is not
// a probability in (0, 1] (a double, an int or a numeric string) counts 1 and is counted in
// invalid_sampling_weights, as tracemetrics does with the same key.
func attributeWeight[S traceview.Source](attr string, b *halfBatch, span, res traceview.Attrs[S]) float64 {
	v, ok := span.GetVal(attr, nil)
	if !ok {
		if v, ok = res.GetVal(attr, nil); !ok {
			return 1
		}
	}
	w, st := sampling.FromAttribute(v)
	if st == sampling.Invalid {
		b.invalidWeights++
	}
	return w
}
