package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"errors"
	"math"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

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
func (w *weighting) weight(b *deltaBatch, span ptrace.Span) (float64, bool) {
	if !w.on {
		return 1, false
	}
	if ts := span.TraceState().AsRaw(); ts != "" {
		// The spans of a request were mostly sampled alike: compare with the last one parsed.
		if ts != b.lastTS {
			b.lastTS = ts
			b.lastCount, b.lastStatus = sampling.FromTraceState(ts)
		}
		c, st := b.lastCount, b.lastStatus
		switch st {
		case sampling.Valid:
			return c, true
		case sampling.Invalid:
			b.invalidWeights++
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
			b.invalidWeights++
			return 1, false
		}
	default:
		b.invalidWeights++
		return 1, false
	}
	c, st := sampling.FromProbability(p)
	if st == sampling.Invalid {
		b.invalidWeights++
		return c, false
	}
	return c, true
}

// Weighted batches. A batch is unweighted (every span counts 1) until its first span with a
// weight other than 1: from then on it keeps, beside the series and observations, their
// weights (seriesW, obsW), backfilled with 1 for what came before. So traffic without sampling
// information pays for nothing but the tracestate length check.

// startWeights makes b weighted: every series and observation so far weighs 1 per span.
func (b *deltaBatch) startWeights() {
	b.weighted = true
	b.seriesW = b.seriesW[:0]
	for i := range b.series {
		b.seriesW = append(b.seriesW, float64(b.series[i].count))
	}
	b.obsW = b.obsW[:0]
	for range b.obs {
		b.obsW = append(b.obsW, 1)
	}
}

// weigh adds weight w of one span (or event) to series idx, and to the observation just
// appended when the family has durations.
func (b *deltaBatch) weigh(idx uint32, w float64, obs bool) {
	for len(b.seriesW) < len(b.series) {
		b.seriesW = append(b.seriesW, 0)
	}
	b.seriesW[idx] += w
	if obs {
		b.obsW = append(b.obsW, w)
	}
}

func (b *deltaBatch) resetWeights() {
	b.weighted = false
	b.invalidWeights = 0
	b.seriesW = b.seriesW[:0]
	b.obsW = b.obsW[:0]
	b.lastTS = "" // do not keep the request's memory alive
}

// Integer counts. Calls and bucket counts are integers, adjusted counts are not (p = 0.3 is
// 3.33 spans). Each series carries the remainder of its weighted count (seriesTable.carry,
// across batches and flush intervals, delta or cumulative): the integers it emits add up to
// the floor of its weighted total plus the first carry, so they never drift 1 or more from
// the exact total, are exact for integer adjusted counts (any power-of-two probability), and
// are deterministic. In a family with durations each span's integer goes to both the count
// and the span's bucket, so a histogram's count is its calls and its buckets' sum; a family
// without durations (events, calls split by calls_dimensions) adds a batch's series weight
// at once. Every span with weight >= 1 adds at least 1.

// carry returns the remainder of series id, growing the slice on first use: tables of
// unweighted traffic never hold one.
func (t *seriesTable) carry(id uint32) *float64 {
	if int(id) >= len(t.carries) {
		t.carries = grow(t.carries, int(id)+1)
	}
	return &t.carries[id]
}

// touchCarry reads the carry of id, if the table has weights, for touchSeries: the
// observations of a weighted batch find it cached.
func touchCarry(t *seriesTable, id uint32) uint32 {
	if int(id) < len(t.carries) {
		return uint32(math.Float64bits(t.carries[id]))
	}
	return 0
}

// resetCarry forgets the remainder of an id being reused by a new series.
func (t *seriesTable) resetCarry(id uint32) {
	if int(id) < len(t.carries) {
		t.carries[id] = 0
	}
}

// observeN counts k durations in explicit bucket i of row.
func (d *deltaFamily) observeN(row, nb, i int, k uint64) {
	b := &d.buckets.row(row, nb)[i]
	sum := uint64(*b) + k
	*b = uint16(sum)
	if wraps := sum / bucketWrap; wraps > 0 {
		if d.spill == nil {
			d.spill = map[int]uint64{}
		}
		d.spill[row*nb+i] += wraps * bucketWrap
	}
}

// applyWeightedObs folds the observations of a weighted batch into the active buffer: each
// span's weight, rounded with its series' carry, counts in the row and in the span's bucket.
// apply has resolved the rows (a.rows).
func (a *aggregator) applyWeightedObs(b *deltaBatch) {
	nb, expoSize := a.nb, a.expoSize
	for j, o := range b.obs {
		s := &b.series[o.series]
		d := &a.active.fams[s.fam]
		row := a.rows[o.series]
		r := d.rows.at(int(row))
		k := sampling.Round(a.tables[s.fam].carry(r.id), b.obsW[j])
		r.count += k
		if nb > 0 {
			d.observeN(int(row), nb, int(o.code), k)
			continue
		}
		e := d.expo.at(int(row))
		if o.code == zeroCode {
			e.zero += k
		} else {
			e.sketch.add(&d.slab, o.code, k, expoSize)
		}
	}
}
