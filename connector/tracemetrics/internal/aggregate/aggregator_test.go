package aggregate

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// Expired keys are reclaimed by compacting the key arena; the flusher switches to the moved
// keys and every surviving series keeps its exact attributes.
func TestKeyArenaCompaction(t *testing.T) {
	e := newEngine(t, testPlan(func(p *series.Plan) {
		p.FlushInterval = 10 * time.Second
		p.SeriesIdle = int64(15 * time.Second)
	}))
	big := strings.Repeat("x", 20_000)
	for i := 0; i < 300; i++ {
		e.consume(t, oneSpan("svc", fmt.Sprintf("big-%d-%s", i, big)))
	}
	keep := func() {
		for i := 0; i < 5; i++ {
			e.consume(t, oneSpan("svc", fmt.Sprintf("keep-%d", i)))
		}
	}
	keep()
	e.settle(t) // orders the aggregator's writes before the reads below
	chunksBefore := len(e.agg.tables[0].keys.chunks)
	for i := 0; i < 4; i++ {
		if i == 2 {
			// Created in the interval whose swap compacts: announced with its old reference,
			// moved at the same swap.
			e.consume(t, oneSpan("svc", "fresh"))
		}
		md := e.flush(t)
		keep()
		if i < 2 {
			continue
		}
		// Expired at the second flush, compacted at the third.
		names := map[string]bool{}
		calls := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Sum().DataPoints()
		for d := 0; d < calls.Len(); d++ {
			v, _ := calls.At(d).Attributes().Get(series.SpanNameKey)
			names[v.Str()] = true
		}
		require.Equal(t, map[string]bool{"keep-0": true, "keep-1": true, "keep-2": true, "keep-3": true, "keep-4": true, "fresh": true}, names)
	}
	require.NoError(t, e.Shutdown(t.Context()))
	require.NotEqual(t, chunksBefore, len(e.agg.tables[0].keys.chunks), "the arena was compacted")
	require.Less(t, e.agg.tables[0].keys.waste, 1<<20)
}

// The aggregator wakes per wakeSeries worth of queued batches, counted at the size of the
// largest batches, and at most per capacity/8 batches: queued batches are alive, so neither
// large requests nor a large ring may mean many of them.
func TestWakeBatchIsBounded(t *testing.T) {
	const defaultRing, maxRing = 1024, 1 << 20 // ring_size's default and bound
	assert.Equal(t, 1, WakeCount(2, 10))
	assert.Equal(t, 8, WakeCount(64, 10))
	assert.Equal(t, 16, WakeCount(defaultRing, 1000))
	assert.Equal(t, 16, WakeCount(maxRing, 1000))
	assert.Equal(t, defaultRing/8, WakeCount(defaultRing, 10))
	assert.Equal(t, 1, WakeCount(defaultRing, 100_000))
	assert.Equal(t, defaultRing/8, WakeCount(defaultRing, 0))
}

// The series of a cardinality burst expire once idle, and the index gives their slots back.
func TestIdleSeriesGiveIndexSlotsBack(t *testing.T) {
	e := newEngine(t, testPlan(func(p *series.Plan) { p.SeriesIdle = int64(5 * time.Minute) }))
	for i := 0; i < 500; i++ {
		e.consume(t, oneSpan("svc", fmt.Sprintf("burst-%d", i)))
	}
	e.flush(t)
	require.Equal(t, 500, e.agg.tables[0].n)
	for elapsed := time.Duration(0); elapsed <= 5*time.Minute; elapsed += e.p.FlushInterval {
		e.consume(t, oneSpan("svc", "steady"))
		e.flush(t)
	}
	require.Equal(t, 1, e.agg.tables[0].n, "only the steady series is left")
	require.Equal(t, 1, e.agg.tables[0].index.Len())
	require.Less(t, e.agg.tables[0].index.Bytes(), 1024, "the index gave back the burst's slots")
}

// A resource idle for metrics_expiration leaves with its series: the table holds the live one
// alone.
func TestIdleResourcesLeave(t *testing.T) {
	e := newEngine(t, testPlan(func(p *series.Plan) {
		p.FlushInterval = 10 * time.Second
		p.ResourceIdle = int64(15 * time.Second)
	}))
	e.consume(t, oneSpan("gone", "x"), oneSpan("gone", "y"))
	for i := 0; i < 3; i++ {
		e.consume(t, oneSpan("alive", "x"))
		want := 2
		if i >= 2 {
			want = 1
		}
		require.Equal(t, want, e.flush(t).ResourceMetrics().Len(), "flush %d", i)
	}
	require.Equal(t, 1, e.agg.res.live)
}

// Cap overflow series come and go (max_series_per_service, series expiring while idle, then
// traffic again); throughout, every slot of a resource points at a live cap overflow series
// of its own kind and status, and every such series has its slot.
func TestCapOverflowSlotsPointAtTheirSeries(t *testing.T) {
	e := newEngine(t, testPlan(func(p *series.Plan) {
		p.FlushInterval = time.Second
		p.SeriesIdle = int64(2 * time.Second)
		p.MaxService = 20
	}))
	r := rand.New(rand.NewPCG(11, 11))
	traffic := func() ptrace.Traces {
		td := ptrace.NewTraces()
		for _, svc := range []string{"noisy", "quiet"} {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr(series.ServiceNameKey, svc)
			spans := rs.ScopeSpans().AppendEmpty().Spans()
			for range 200 {
				sp := spans.AppendEmpty()
				if svc == "noisy" {
					sp.SetName(fmt.Sprintf("GET /orders/%d", r.IntN(1000)))
				} else {
					sp.SetName(fmt.Sprintf("op-%d", r.IntN(5)))
				}
				sp.SetKind(ptrace.SpanKind(r.IntN(6)))
				sp.Status().SetCode(ptrace.StatusCode(r.IntN(3)))
				sp.SetStartTimestamp(1)
				sp.SetEndTimestamp(2_000_001)
			}
		}
		return td
	}
	for range 3 {
		e.consume(t, traffic())
	}
	for range 3 {
		e.flush(t) // idle past series_expiration: all expire
	}
	for range 3 {
		e.consume(t, traffic())
	}
	require.NoError(t, e.Shutdown(t.Context()))

	// The aggregator has stopped: its state can be read.
	a, live := e.agg, 0
	for f, tab := range a.tables {
		for id := range tab.meta {
			if m := &tab.meta[id]; m.keyLen > 0 && series.IsOverflowKey(tab.key(uint32(id))) {
				require.True(t, series.IsCapOverflowKey(tab.key(uint32(id))))
				require.EqualValues(t, id+1, a.res.all[m.res].capOverflow[f][a.CapOverflowSlot(tab.key(uint32(id)))])
				live++
			}
		}
		for rid := range a.res.all {
			for slot, id1 := range a.res.all[rid].capOverflow[f] {
				if id1 != 0 {
					key := tab.key(id1 - 1)
					require.True(t, series.IsOverflowKey(key), "slot %d points at a series that is not an overflow series", slot)
					require.Equal(t, slot, a.CapOverflowSlot(key))
					live--
				}
			}
		}
	}
	require.Zero(t, live, "slots and live cap overflow series match")
}
