package tracemetrics

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/flush"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/hash"
)

// BenchmarkCapSelection measures ConsumeTraces with aggregation (1 producer, 1000-span
// requests, 100k series in 10 services, as BenchmarkConsumeTraces) with cap_selection by
// arrival and by traffic in the same run: with no cap, with a cap that is never reached
// (demand estimates only), and with each cap set so that 9 spans in 10 are refused (every
// refused series counted in its scope's sketch). No flush happens while it measures:
// BenchmarkRerank has the cost of a re-ranking.
func BenchmarkCapSelection(b *testing.B) {
	const nSeries, batch = 100_000, 1000
	input := benchInput(nSeries, batch)
	for _, v := range []struct {
		name   string
		limits map[string]any
	}{
		{"no cap", nil},
		{"max_series=1M (not reached)", map[string]any{"max_series": 1_000_000}},
		{"max_series_per_service=1k", map[string]any{"max_series_per_service": nSeries / 100}},
		{"max_series=10k", map[string]any{"max_series": nSeries / 10}},
	} {
		for _, by := range []string{selectByArrival, selectByTraffic} {
			if v.limits == nil && by == selectByTraffic {
				continue // nothing to select
			}
			b.Run(fmt.Sprintf("%s/by=%s", v.name, by), func(b *testing.B) {
				raw := configFor(NewFactory())
				maps.Copy(raw, v.limits)
				raw["cap_selection"] = map[string]any{"by": by}
				measureConsume(b, startConnector(b, NewFactory(), raw), input, 1)
			})
		}
	}
}

// BenchmarkRerank measures one re-ranking of cap_selection by traffic, the aggregator's work
// at a swap: series in 10 services, each at its max_series_per_service and the family at
// max_series, every scope's sketch full of candidates (sketch_size 128) that beat the
// series of the interval (none received a span), so each re-ranking scans every series and
// promotes 128 per scope. The series demoted are put back between runs, off the clock.
func BenchmarkRerank(b *testing.B) {
	for _, nSeries := range []int{100_000, 500_000} {
		b.Run(fmt.Sprintf("series=%dk", nSeries/1000), func(b *testing.B) {
			raw := configFor(NewFactory())
			raw["max_series"] = nSeries
			raw["max_series_per_service"] = nSeries / 10
			cfg := NewFactory().CreateDefaultConfig().(*Config)
			require.NoError(b, confmap.NewFromStringMap(raw).Unmarshal(cfg))
			c, err := newConnector(componenttest.NewNopTelemetrySettings(), cfg, consumertest.NewNop(),
				deps{clock: clockwork.NewFakeClockAt(testStart), chunkPoints: flush.ChunkDataPoints, keyHash: hash.Sum64}, "")
			require.NoError(b, err)
			a := c.agg // not started: driven from here
			for _, td := range benchInput(nSeries, 1000) {
				batch := new(series.Batch)
				c.reducer.Reduce(batch, td)
				a.apply(batch)
			}
			tab := a.tables[0]
			require.Equal(b, nSeries, tab.n)
			a.epoch++ // the series' rows are in another buffer: none received a span
			spare := series.NewDeltaBuffer(len(a.tables))
			var took time.Duration
			runs := 0
			for b.Loop() {
				b.StopTimer()
				restoreDemoted(a, tab)
				fillSketches(a, 128, 10)
				a.epoch++
				start := time.Now()
				b.StartTimer()
				a.sel.rerank(a.tables, a.res, a.epoch, spare)
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
