package reduce // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/reduce"

import (
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/sampling"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
)

// Weighting is what the reducer needs of the sampling configuration: whether spans count by
// their adjusted count, and the attribute that may hold their sampling probability.
type Weighting struct {
	on        bool
	attribute string
}

// traceStateMemo is the last tracestate a producer parsed and what it said: the spans of a
// request were mostly sampled alike.
type traceStateMemo struct {
	ts     string
	count  float64
	status sampling.Status
}

// NewWeighting weighs spans by their adjusted count when on, read from the tracestate, else
// from attribute when not "".
func NewWeighting(on bool, attribute string) Weighting {
	return Weighting{on: on, attribute: attribute}
}

// weightOf returns the adjusted count of span, 1 when it has none or an invalid one (counted
// in b.invalidWeights), and whether it has one (a valid threshold or probability: the span's
// counts are extrapolated, sampling.method). The attribute is read on the span, then on its
// resource (res). Without a tracestate or the attribute this is a length check.
func weightOf[S traceview.Source](w *Weighting, b *series.Batch, memo *traceStateMemo, span *traceview.Span[S], res traceview.Attrs[S]) (float64, bool) {
	if !w.on {
		return 1, false
	}
	if ts := span.TraceState(); ts != "" {
		// The spans of a request were mostly sampled alike: compare with the last one parsed.
		if ts != memo.ts {
			memo.ts = ts
			memo.count, memo.status = sampling.FromTraceState(ts)
		}
		c, st := memo.count, memo.status
		switch st {
		case sampling.Valid:
			return c, true
		case sampling.Invalid:
			b.InvalidWeights++
			return 1, false
		}
	}
	if w.attribute == "" {
		return 1, false
	}
	v, ok := span.Attributes().GetVal(w.attribute, nil)
	if !ok {
		// Then the resource's, as Tempo reads span_multiplier_key: an SDK that samples a
		// whole service at one rate may say so once, on the resource.
		if v, ok = res.GetVal(w.attribute, nil); !ok {
			return 1, false
		}
	}
	c, st := sampling.FromAttribute(v)
	if st == sampling.Invalid {
		b.InvalidWeights++
		return c, false
	}
	return c, true
}
