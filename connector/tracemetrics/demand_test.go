package tracemetrics

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The demand gauges estimate, per configured limit, the distinct series it was offered and
// those it refused: a limit sees only what the limits before it let through. After
// series_expiration without spans they fall to 0.
func TestDemandEstimatesByLimit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		limits   map[string]any
		demand   map[string]int64
		overflow map[string]int64
	}{
		{
			// noisy sends 2000 names and keeps 10 series; quiet's 5 have room. max_series
			// is offered only what max_series_per_service let through.
			name:     "max_series_per_service then max_series",
			limits:   map[string]any{"max_series_per_service": 10, "max_series": 100},
			demand:   map[string]int64{"max_series_per_service": 2005, "max_series": 15},
			overflow: map[string]int64{"max_series_per_service": 1990, "max_series": 0},
		},
		{
			name:     "max_series",
			limits:   map[string]any{"max_series": 12},
			demand:   map[string]int64{"max_series": 2005},
			overflow: map[string]int64{"max_series": 1993},
		},
		{
			// spanmetrics' limit is per resource and checked first: 2 series each, and
			// max_series_per_service is offered nothing else.
			name:     "aggregation_cardinality_limit first",
			limits:   map[string]any{"aggregation_cardinality_limit": 2, "max_series_per_service": 3, "max_series": 0},
			demand:   map[string]int64{"aggregation_cardinality_limit": 2005, "max_series_per_service": 4},
			overflow: map[string]int64{"aggregation_cardinality_limit": 2001, "max_series_per_service": 0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := map[string]any{
				"metrics_flush_interval": time.Second,
				"series_expiration":      4 * time.Second,
			}
			for k, v := range tc.limits {
				raw[k] = v
			}
			c, sink, clock, tel := startOurs(t, raw, true)
			var spans []selSpan
			for i := range 5 {
				spans = append(spans, selSpan{svc: "quiet", name: fmt.Sprintf("q-%d", i), ms: 1})
			}
			for i := range 2000 {
				spans = append(spans, selSpan{svc: "noisy", name: fmt.Sprintf("GET /orders/%d", i), ms: 1})
			}
			for i := 0; i < len(spans); i += 250 {
				// Twice: a series seen again is not counted again.
				td := selTraces(spans[i:min(i+250, len(spans))])
				require.NoError(t, c.ConsumeTraces(context.Background(), td))
				require.NoError(t, c.ConsumeTraces(context.Background(), td))
			}
			flushOnce(t, c, sink, clock, time.Second)
			near := func(want map[string]int64, got map[string]int64, what string) {
				t.Helper()
				require.Len(t, got, len(want), "%s: one series per configured limit", what)
				for k, w := range want {
					require.InDelta(t, float64(w), float64(got[k]), 0.03*float64(w)+1, "%s{limit=%s}", what, k)
				}
			}
			near(tc.demand, seriesCounterByLimit(t, tel, "series_demand"), "series_demand")
			near(tc.overflow, seriesCounterByLimit(t, tel, "overflow_series"), "overflow_series")

			for range 5 {
				flushOnce(t, c, sink, clock, time.Second)
			}
			for k, v := range seriesCounterByLimit(t, tel, "series_demand") {
				require.Zero(t, v, "series_demand{limit=%s} after series_expiration without spans", k)
			}
		})
	}
}
