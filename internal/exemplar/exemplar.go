// Package exemplar is the exemplar both trace connectors keep for a data point: a span's IDs,
// the value it added and whether it failed, and the order they choose by, so that an exemplar
// of tracemetrics and one of tracegraph for the same interval name alike spans.
package exemplar // import "github.com/otelcol-red/otelcol-red/internal/exemplar"

import "go.opentelemetry.io/collector/pdata/pcommon"

// Exemplar is a candidate exemplar.
type Exemplar struct {
	TraceID pcommon.TraceID
	SpanID  pcommon.SpanID
	IsError bool
	Value   float64 // the span's duration in the histogram's unit
}

// Stronger reports whether a should displace b: failed spans first, then the slowest. Users
// open an exemplar to see why a point is bad, and a failure or the slowest request says most.
func (a *Exemplar) Stronger(b *Exemplar) bool {
	if a.IsError != b.IsError {
		return a.IsError
	}
	return a.Value > b.Value
}
