package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"errors"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/sampling"
)

// SamplingConfig configures sampling weights: a span kept by a probabilistic sampler stands
// for 1/p spans (its adjusted count), and counts as that many.
type SamplingConfig struct {
	// Weighted counts each span by its adjusted count: from a valid OpenTelemetry threshold
	// in its W3C tracestate (`ot=th:…`, as spanmetrics v0.165.1 does), else from Attribute.
	// Spans without either count 1. false counts every span 1 whatever it carries (what
	// spanmetrics did up to v0.145.0). Default true.
	Weighted bool `mapstructure:"weighted"`
	// Attribute names a span attribute holding the sampling probability p in (0, 1] (a double,
	// an int or a numeric string) that a span was kept with; the span counts 1/p. It is read
	// only when the tracestate has no valid threshold. Empty (the default): not read.
	Attribute string `mapstructure:"attribute"`
	// prevent unkeyed literal initialization
	_ struct{}
}

func (c SamplingConfig) validate() error {
	if c.Attribute != "" && !c.Weighted {
		return errors.New("sampling.attribute: set, but sampling.weighted is false: the attribute would be ignored")
	}
	return nil
}

// weighting is what the reducer needs of SamplingConfig.
type weighting struct {
	on        bool
	attribute string
}

func newWeighting(c SamplingConfig) weighting {
	return weighting{on: c.Weighted, attribute: c.Attribute}
}

// weight returns the adjusted count of span, 1 when it has none or an invalid one (counted
// in b.invalidWeights), and whether it has one (a valid threshold or probability: the span's
// counts are extrapolated, sampling.method). Without a tracestate or the attribute this is a
// length check.
func (w *weighting) weight(b *series.Batch, sc *producerScratch, span ptrace.Span) (float64, bool) {
	if !w.on {
		return 1, false
	}
	if ts := span.TraceState().AsRaw(); ts != "" {
		// The spans of a request were mostly sampled alike: compare with the last one parsed.
		if ts != sc.lastTS {
			sc.lastTS = ts
			sc.lastCount, sc.lastStatus = sampling.FromTraceState(ts)
		}
		c, st := sc.lastCount, sc.lastStatus
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
	v, ok := span.Attributes().Get(w.attribute)
	if !ok {
		return 1, false
	}
	var p float64
	switch v.Type() {
	case pcommon.ValueTypeDouble:
		p = v.Double()
	case pcommon.ValueTypeInt:
		p = float64(v.Int())
	case pcommon.ValueTypeStr:
		var err error
		if p, err = strconv.ParseFloat(v.Str(), 64); err != nil {
			b.InvalidWeights++
			return 1, false
		}
	default:
		b.InvalidWeights++
		return 1, false
	}
	c, st := sampling.FromProbability(p)
	if st == sampling.Invalid {
		b.InvalidWeights++
		return c, false
	}
	return c, true
}
