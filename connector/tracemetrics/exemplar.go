package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import "go.opentelemetry.io/collector/pdata/pcommon"

type exemplar struct {
	traceID pcommon.TraceID
	spanID  pcommon.SpanID
	isError bool
	value   float64
}

// stronger reports whether a should displace b: error spans first, then the slowest.
func (a *exemplar) stronger(b *exemplar) bool {
	if a.isError != b.isError {
		return a.isError
	}
	return a.value > b.value
}

// offerExemplar merges candidate e into a bounded set of limit slots of pool starting at
// *off (-1: none yet, the slots are reserved on the first offer), *n of them filled. The
// reducer uses it for a batch's series and the aggregator for an interval's rows, so both
// keep the same ones: error spans first, then the slowest.
func offerExemplar(pool *[]exemplar, off, n *int32, limit int, e *exemplar) {
	if *off < 0 {
		*off = int32(len(*pool))
		*pool = appendZeros(*pool, limit)
	}
	slots := (*pool)[*off : int(*off)+limit]
	if int(*n) < limit {
		slots[*n] = *e
		*n++
		return
	}
	weakest := 0
	for i := 1; i < limit; i++ {
		if slots[weakest].stronger(&slots[i]) {
			weakest = i
		}
	}
	if e.stronger(&slots[weakest]) {
		slots[weakest] = *e
	}
}
