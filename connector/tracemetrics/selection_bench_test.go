package tracemetrics

import (
	"fmt"
	"maps"
	"testing"
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
