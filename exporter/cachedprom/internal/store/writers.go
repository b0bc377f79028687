package store // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"

// writerState is one OTLP series' last cumulative point, kept for the
// writers of a merged series so each contributes its increase once; of a
// delta writer, only the end of its last interval.
type writerState struct {
	row     uint32
	ts      int64
	value   float64 // number value, or histogram sum
	count   uint64
	buckets []uint64
	delta   bool // kept for the overlap check of deltas alone (freshDelta)
}

// writers holds the writers of merged series by OTLP identity (temporality.go
// says when a series becomes merged and what each writer adds). A series
// written by one OTLP series, the usual case, has none here.
type writers map[uint64]*writerState

// forgetRow forgets the writers of row id, a merged or overflow series
// being removed.
func (ws writers) forgetRow(id uint32) {
	for k, w := range ws {
		if w.row == id {
			delete(ws, k)
		}
	}
}

// forgetQuiet forgets the delta writers whose last interval ended before
// cutoff (unix nanoseconds) while their series lives on: a writer's state
// only served to drop a retry of its last interval, and the writers of a
// long-lived series (graph gateways replaced by others with their own
// identity) would otherwise pile up with every restart.
func (ws writers) forgetQuiet(cutoff int64) {
	for k, w := range ws {
		if w.delta && w.ts < cutoff {
			delete(ws, k)
		}
	}
}
