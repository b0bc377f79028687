package reduce // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/reduce"

import (
	"sync/atomic"

	"github.com/otelcol-red/otelcol-red/internal/spanfilter"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
)

// Filtering is what the reducer needs of filter_policies: the compiled policies (nil: every
// span counts) and the counter of the spans they drop, the connector's own telemetry. Spans a
// policy drops are never silently lost: each is counted there.
type Filtering struct {
	filter  *spanfilter.Filter
	dropped *atomic.Int64
}

// NewFiltering drops the spans f does not keep (nil: none) and counts them in dropped.
func NewFiltering(f *spanfilter.Filter, dropped *atomic.Int64) Filtering {
	return Filtering{filter: f, dropped: dropped}
}

// filteredOut reports whether filter_policies drop the span under the cursor, of a resource
// with attributes res; it counts the drop in *n, which the reducer adds to the counter once
// per request rather than once per span.
func filteredOut[S traceview.Source](f *Filtering, res traceview.Attrs[S], span *traceview.Span[S], n *int64) bool {
	if spanfilter.Keep(f.filter, res, span) {
		return false
	}
	*n++
	return true
}

// publish adds a request's dropped spans to the counter.
func (f *Filtering) publish(n int64) {
	if n > 0 {
		f.dropped.Add(n)
	}
}
