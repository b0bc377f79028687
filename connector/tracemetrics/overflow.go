package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

// overflowKind says whether, and by which limit, a series' spans went to an overflow series.
type overflowKind uint8

const (
	noOverflow      overflowKind = iota
	limitOverflow                // aggregation_cardinality_limit: spanmetrics' overflow series
	serviceOverflow              // max_series_per_service: a cap overflow series
	globalOverflow               // max_series: a cap overflow series
	overflowKinds
)

// overflowLimits are the YAML keys of the limits, by overflowKind: the limit attribute of the
// overflow_spans counter, so that an operator knows which one to raise.
var overflowLimits = [overflowKinds]string{
	limitOverflow:   "aggregation_cardinality_limit",
	serviceOverflow: "max_series_per_service",
	globalOverflow:  "max_series",
}
