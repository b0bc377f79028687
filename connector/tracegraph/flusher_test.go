package tracegraph

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/otelcol-red/otelcol-red/internal/intake"
)

// buildWith reduces tds into a fresh aggregator built with gates g (no goroutine), and returns
// the metrics a flush builds.
func buildWith(t *testing.T, cfg *Config, g gates, tds ...ptrace.Traces) map[string]point {
	t.Helper()
	p := newPlan(cfg, g)
	clock := clockwork.NewFakeClock()
	tel := &telemetry{}
	fl := newFlusher(p, &consumertest.MetricsSink{}, zap.NewNop(), tel, clock)
	a := newAggregator(p, intake.NewPipe(4, 0, halfBatches), clock, tel, fl)
	for _, td := range tds {
		b := new(halfBatch)
		reducer{p: p}.reduce(b, td)
		for i := range b.halves {
			a.apply(b, &b.halves[i], clock.Now().UnixNano())
		}
	}
	md, _ := fl.build(a)
	return flatten(md)
}

// servicegraph's legacy gates: milliseconds, and one histogram under the old name.
func TestLegacyGates(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	call := []ptrace.Traces{oneSpan("a", ptrace.SpanKindClient, 1, 1, 0, nil), oneSpan("b", ptrace.SpanKindServer, 1, 2, 1, nil)}
	const attrs = "{client=a,connection_type=,failed=false,server=b}"

	got := buildWith(t, cfg, gates{virtualNode: true}, call...)
	require.Equal(t, []string{metricClient + attrs, metricServer + attrs, metricTotal + attrs}, sortedKeys(got))
	require.Equal(t, "s", got[metricServer+attrs].Unit)
	require.InDelta(t, 0.1, got[metricServer+attrs].Sum, 1e-12)

	got = buildWith(t, cfg, gates{virtualNode: true, legacyMetricNames: true, legacyUnitMs: true}, call...)
	require.Equal(t, []string{metricLegacyServer + attrs, metricTotal + attrs}, sortedKeys(got))
	h := got[metricLegacyServer+attrs]
	require.Equal(t, "ms", h.Unit)
	require.InDelta(t, 100, h.Sum, 1e-9)
	require.Equal(t, defaultBoundsMs, h.Bounds)
}

// Halves expire on store_expiration_loop while the connector runs, not only at shutdown.
func TestHalvesExpireWhileRunning(t *testing.T) {
	c, sink := startTracegraph(t, func(cfg *Config) {
		cfg.Store.TTL = 30 * time.Millisecond
		cfg.StoreExpirationLoop = 10 * time.Millisecond
		cfg.MetricsFlushInterval = ptr(20 * time.Millisecond)
	})
	consume(t, c, oneSpan("a", ptrace.SpanKindClient, 1, 1, 0, func(s ptrace.Span) { s.Attributes().PutStr("db.system", "redis") }),
		oneSpan("a", ptrace.SpanKindServer, 2, 1, 0, nil)) // a root server span
	require.Eventually(t, func() bool {
		all := sink.AllMetrics()
		return len(all) > 0 && len(requestTotals(all[len(all)-1])) == 2
	}, 5*time.Second, time.Millisecond)
	require.EqualValues(t, 2, c.tel.expiredEdges.Load())
	require.Zero(t, c.tel.pending.Load())
	require.Equal(t, map[string]int64{
		"{client=a,connection_type=virtual_node,failed=false,server=redis}": 1,
		"{client=user,connection_type=virtual_node,failed=false,server=a}":  1,
	}, requestTotals(lastFlush(t, sink)))
}
