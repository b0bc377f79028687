package aggregate

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// A re-ranking reuses its scratch and sketches: once it has run at a size it allocates
// nothing, while it promotes and demotes in every scope.
func TestRerankAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	e := newEngine(t, testPlan(func(p *series.Plan) { p.MaxService, p.MaxSeries = 20, 50 }))
	for s := range 4 {
		for i := range 100 {
			e.consume(t, oneSpan(fmt.Sprintf("svc-%d", s), fmt.Sprintf("n-%d", i)))
		}
	}
	require.NoError(t, e.Shutdown(t.Context()))
	a := e.agg // stopped: its state can be driven from here
	tab := a.tables[0]
	full := series.NewDeltaBuffer(len(a.tables))
	run := func() {
		restoreDemoted(a, tab)
		// Every series received one span in the interval that ends: the candidates (5 spans)
		// beat them, and each gives up its place demoted (it received spans), so that the
		// next run can restore it.
		full.Reset()
		a.epoch++
		for id := range tab.meta {
			if m := &tab.meta[id]; m.keyLen > 0 {
				m.epoch, m.row = a.epoch, full.Fams[0].NewRow(uint32(id), 0, a.NB, false)
				full.Fams[0].Rows.At(int(m.row)).Count = 1
			}
		}
		fillRefused(a, 30, 5)
		a.epoch++ // as swap does
		a.sel.rerank(a.tables, a.res, a.epoch, testStart.UnixNano(), full)
	}
	run()
	run()
	require.Zero(t, testing.AllocsPerRun(20, run))
	// Read from the aggregator: the telemetry is unregistered once shut down.
	require.Positive(t, a.tel.DemotedSeries[series.ServiceOverflow].Load(), "per-service scopes re-ranked")
	require.Positive(t, a.tel.DemotedSeries[series.GlobalOverflow].Load(), "the global scope re-ranked")
}

// restoreDemoted counts every demoted series of tab against the caps again, as a promotion
// would, so that the next re-ranking has as much to do as the last.
func restoreDemoted(a *Aggregator, tab *seriesTable) {
	for id := range tab.meta {
		if m := &tab.meta[id]; m.keyLen > 0 && m.epoch == demotedEpoch {
			a.limits.restore(tab, &a.res.all[m.res], uint32(id), a.epoch)
		}
	}
}

// fillRefused counts n refused series of w spans each in every service's scope of family 0,
// and n others in the family's scope, as refusals by the caps would.
func fillRefused(a *Aggregator, n int, w uint64) {
	ts := testStart.UnixNano()
	for svc := range a.res.svcRefs {
		for i := range n {
			h := uint64(svc*1000+i+1) * 0x9e3779b97f4a7c15
			a.sel.count(0, uint32(svc), h, w, ts, series.ServiceOverflow)
			a.sel.count(0, uint32(svc), h+1, w, ts, series.GlobalOverflow)
		}
	}
}
