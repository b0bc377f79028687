package store

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
)

// TestIngestAllocatesPerScopeNotPerPoint: updating existing series
// allocates per resource and scope of a batch (its identity prefix and
// labels), never per data point: twice the points over the same scopes
// allocate the same.
func TestIngestAllocatesPerScopeNotPerPoint(t *testing.T) {
	allocs := func(points int) float64 {
		s := newTestStore()
		defer s.Close()
		s.Consume(promtest.SpanmetricsLike(points, 0), time.Now())
		update := promtest.SpanmetricsLike(points, 1)
		return testing.AllocsPerRun(10, func() { s.Consume(update, time.Now()) })
	}
	small, large := allocs(2000), allocs(4000)
	assert.Equal(t, small, large, "allocations grow with the number of points")
	assert.LessOrEqual(t, small, float64(50*16), "50 scopes")
}

// TestMemoryFallsAfterBurst: after a cardinality burst expires, label bytes
// are compacted (the survivors still render right) and, once nothing is
// left, every chunk is given back.
func TestMemoryFallsAfterBurst(t *testing.T) {
	s := newTestStore()
	t.Cleanup(s.Close)
	t0 := time.Unix(1_700_000_000, 0)
	const n = 60_000 // RED series: 2 MiB of label sets (pair ids), 3 chunks
	for from := 0; from < n; from += 1000 {
		s.Consume(promtest.RedDeltaBatch(from, from+1000, t0, t0.Add(time.Minute)), t0)
	}
	// The last 1000 are updated later and survive.
	s.Consume(promtest.RedDeltaBatch(n-1000, n, t0.Add(time.Minute), t0.Add(2*time.Minute)), t0.Add(time.Minute))
	chunksBefore := len(s.t.labels.sets.chunks)
	require.Equal(t, n-1000, s.Expire(t0.Add(time.Second))/2)
	assert.Less(t, len(s.t.labels.sets.chunks), chunksBefore, "label sets compacted")
	assert.Zero(t, s.t.labels.sets.deadLen)
	assert.Equal(t, 1000, s.t.labels.live())
	assert.Equal(t, 1000, s.t.labels.sets.byValue.Len(), "a freed set leaves its table")
	assert.Equal(t, 1000, s.t.labels.byIdent.Len(), "a freed set forgets its identity")
	assert.Equal(t, s.t.labels.pairs.live, s.t.labels.pairs.byValue.Len(), "a freed pair leaves its table")

	out := sampleLines(s)
	promtest.CheckExposition(t, []byte(out), false)
	assert.Equal(t, 1000, strings.Count(out, "traces_span_metrics_calls_total{"))
	assert.Equal(t, float64(1000*6), promtest.SumSamples(t, out, "traces_span_metrics_calls_total{"))

	require.Equal(t, 2000, s.Expire(t0.Add(time.Hour)))
	assert.Empty(t, s.t.rows.chunks)
	assert.Empty(t, s.t.buckets.chunks)
	assert.Zero(t, s.t.labels.byIdent.Len())
	assert.Zero(t, s.t.rows.index.Len())
	assert.Nil(t, s.t.rows.setRows)
	assert.Zero(t, s.t.labels.live())
	// And the store works again.
	s.Consume(promtest.RedDeltaBatch(0, 10, t0.Add(2*time.Hour), t0.Add(3*time.Hour)), t0.Add(2*time.Hour))
	assert.Equal(t, 20, s.Sizes().Rows)
}

// TestLabelSetSharedByManyFamilies: a label set's first two rows are held
// beside the set and the others in the index; every row of a set shared by
// six families is found, updated and removed through both, in any order.
func TestLabelSetSharedByManyFamilies(t *testing.T) {
	s := newTestStore()
	t.Cleanup(s.Close)
	consume := func(md pmetric.Metrics) { s.Consume(md, time.Now()) }
	names := []string{"g0", "g1", "g2", "g3", "g4", "g5"}
	for _, n := range names {
		consume(promtest.GaugeBatch(n, promtest.TestBase, "a"))
	}
	require.Equal(t, 6, s.Sizes().Rows)
	assert.Equal(t, 4, s.t.rows.index.Len(), "two rows beside the set, four in the index")
	// Remove one held beside the set and one in the index; their places are reused.
	for _, n := range []string{"g1", "g4"} {
		md := promtest.GaugeBatch(n, promtest.TestBase.Add(time.Second), "a")
		md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().At(0).SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
		consume(md)
	}
	require.Equal(t, 4, s.Sizes().Rows)
	consume(promtest.GaugeBatch("g6", promtest.TestBase.Add(2*time.Second), "a"))
	for i, n := range []string{"g0", "g2", "g3", "g5", "g6"} {
		// A second value per family: each update must reach its own row.
		md := promtest.GaugeBatch(n, promtest.TestBase.Add(3*time.Second), "a")
		md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().At(0).SetDoubleValue(float64(10 + i))
		consume(md)
	}
	require.Equal(t, 5, s.Sizes().Rows)
	out := sampleLines(s)
	for i, n := range []string{"g0", "g2", "g3", "g5", "g6"} {
		assert.Contains(t, out, n+`{instance="i-1",job="svc",k="a",otel_scope_name="",otel_scope_schema_url="",otel_scope_version=""} `+strconv.Itoa(10+i)+"\n")
	}
	assert.NotContains(t, out, "g1{")
	assert.NotContains(t, out, "g4{")
	assert.Equal(t, 3, s.t.rows.index.Len())
}
