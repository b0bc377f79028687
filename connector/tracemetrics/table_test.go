package tracemetrics

import (
	"context"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The comments of seriesTable and the README's per-structure table count a series record as
// 32 bytes: a field added to seriesMeta must show up here.
func TestSeriesMetaIs32Bytes(t *testing.T) {
	require.EqualValues(t, 32, unsafe.Sizeof(seriesMeta{}))
}

// Above touchMinSeries apply reads the tables ahead, also once series expired (their ids
// freed, their index entries deleted) and the key arena was compacted under them: the
// read-ahead never fails there, and every span of batches that come back over freed and moved
// entries, crossing touchMinSeries on the way, is counted once.
func TestReadAheadOverExpiredAndCompactedSeries(t *testing.T) {
	const nSeries = 150_000 // key bytes of the expired ones outweigh an arena chunk: compaction
	c, sink, clock, _ := startOurs(t, map[string]any{
		"aggregation_temporality": delta,
		"metrics_flush_interval":  10 * time.Second,
		"series_expiration":       15 * time.Second,
	}, true)
	calls := func(md pmetric.Metrics) (n int64) {
		for i := 0; i < md.ResourceMetrics().Len(); i++ {
			ms := md.ResourceMetrics().At(i).ScopeMetrics().At(0).Metrics()
			for j := 0; j < ms.Len(); j++ {
				if m := ms.At(j); m.Name() == DefaultNamespace+".calls" {
					for k := 0; k < m.Sum().DataPoints().Len(); k++ {
						n += m.Sum().DataPoints().At(k).IntValue()
					}
				}
			}
		}
		return n
	}
	send := func(input []ptrace.Traces) (spans int64) {
		for _, td := range input {
			require.NoError(t, c.ConsumeTraces(context.Background(), td))
			spans += int64(td.SpanCount())
		}
		return spans
	}
	// benchInput repeats small inputs: every series at least once, some several times.
	all, few := benchInput(nSeries, 1000), benchInput(1000, 1000) // few: a subset of all's series
	sent := send(all)
	require.Equal(t, sent, calls(flushOnce(t, c, sink, clock, 10*time.Second)))
	require.GreaterOrEqual(t, c.agg.liveSeries(), touchMinSeries, "the read-ahead ran")
	chunks := len(c.agg.tables[0].keys.chunks)
	for range 3 { // the idle series expire, then their keys are compacted away
		sent = send(few)
		require.Equal(t, sent, calls(flushOnce(t, c, sink, clock, 10*time.Second)))
	}
	require.Equal(t, 1000, c.agg.tables[0].n)
	require.Less(t, len(c.agg.tables[0].keys.chunks), chunks, "the arena was compacted")
	sent = send(few)  // below touchMinSeries again: no read-ahead
	sent += send(all) // crosses it while coming back over the freed ids
	require.Equal(t, sent, calls(flushOnce(t, c, sink, clock, 10*time.Second)))
	require.Equal(t, nSeries, c.agg.tables[0].n)
}
