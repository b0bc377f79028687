package series // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

// Overflow says whether, and by which limit, a series' spans went to an overflow series.
type Overflow uint8

const (
	NoOverflow      Overflow = iota
	LimitOverflow            // aggregation_cardinality_limit: spanmetrics' overflow series
	ServiceOverflow          // max_series_per_service: a cap overflow series
	GlobalOverflow           // max_series: a cap overflow series
	OverflowKinds
)

// OverflowLimits are the YAML keys of the limits, by overflowKind: the limit attribute of the
// overflow_spans counter, so that an operator knows which one to raise.
var OverflowLimits = [OverflowKinds]string{
	LimitOverflow:   "aggregation_cardinality_limit",
	ServiceOverflow: "max_series_per_service",
	GlobalOverflow:  "max_series",
}

// LabelLimit is the YAML key of the per-label limit, the limit attribute of the overflow_spans
// it counts: spans counted in a series with a label's value replaced (not an overflow series).
const LabelLimit = "max_cardinality_per_label"
