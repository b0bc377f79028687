package series // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

import "github.com/otelcol-red/otelcol-red/internal/exemplar"

// Exemplar is a candidate exemplar: a span's IDs and duration, and whether it failed; the
// one tracegraph keeps too (internal/exemplar).
type Exemplar = exemplar.Exemplar

// OfferExemplar merges candidate e into a bounded set of limit slots of pool starting at
// *off (-1: none yet, the slots are reserved on the first offer), *n of them filled. The
// reducer uses it for a batch's series and the aggregator for an interval's rows, so both
// keep the same ones: error spans first, then the slowest.
func OfferExemplar(pool *[]Exemplar, off, n *int32, limit int, e *Exemplar) {
	if *off < 0 {
		*off = int32(len(*pool))
		*pool = AppendZeros(*pool, limit)
	}
	slots := (*pool)[*off : int(*off)+limit]
	if int(*n) < limit {
		slots[*n] = *e
		*n++
		return
	}
	weakest := 0
	for i := 1; i < limit; i++ {
		if slots[weakest].Stronger(&slots[i]) {
			weakest = i
		}
	}
	if e.Stronger(&slots[weakest]) {
		slots[weakest] = *e
	}
}
