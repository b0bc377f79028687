package aggregate

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// BenchmarkRerank measures one re-ranking of cap_selection by traffic, the aggregator's work
// at a swap: series in 10 services, each at its max_series_per_service and the family at
// max_series, 128 candidates per scope in the refused table that beat the series of the
// interval (none received a span), so each re-ranking scans every series and promotes 128
// per scope. The series demoted are put back between runs, off the clock.
func BenchmarkRerank(b *testing.B) {
	for _, nSeries := range []int{100_000, 500_000} {
		b.Run(fmt.Sprintf("series=%dk", nSeries/1000), func(b *testing.B) {
			a, _ := applied(b, testPlan(func(p *series.Plan) {
				p.MaxSeries, p.MaxService = nSeries, int32(nSeries/10)
			}), benchInput(nSeries, 1000))
			tab := a.tables[0]
			require.Equal(b, nSeries, tab.n)
			a.epoch++ // the series' rows are in another buffer: none received a span
			spare := series.NewDeltaBuffer(len(a.tables))
			var took time.Duration
			runs := 0
			for b.Loop() {
				b.StopTimer()
				restoreDemoted(a, tab)
				fillRefused(a, 128, 10)
				a.epoch++
				start := time.Now()
				b.StartTimer()
				a.sel.rerank(a.tables, a.res, a.epoch, testStart.UnixNano(), spare)
				b.StopTimer()
				took += time.Since(start)
				runs++
				b.StartTimer()
			}
			b.ReportMetric(float64(took.Microseconds())/1000/float64(runs), "ms/rerank")
			require.Positive(b, a.tel.DemotedSeries[series.ServiceOverflow].Load())
		})
	}
}
