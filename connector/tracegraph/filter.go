package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"github.com/otelcol-red/otelcol-red/internal/spanfilter"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
)

// filteredOut reports whether filter_policies (Grafana Tempo's, internal/wiretraces/traceview/
// spanfilter) drop the span under the cursor, of a resource with attributes res, and counts a
// drop in *n: the reducer adds the request's count to the filtered_spans telemetry once. Every
// span is filtered, edge or not, as Tempo's service graphs filter them before they look at the
// kind, so that the counter means the same in both.
func filteredOut[S traceview.Source](f *spanfilter.Filter, res traceview.Attrs[S], span *traceview.Span[S], n *int64) bool {
	if spanfilter.Keep(f, res, span) {
		return false
	}
	*n++
	return true
}
