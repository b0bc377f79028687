package aggregate

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
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
	e := newEngine(t, testPlan(func(p *series.Plan) {
		p.IsDelta = true
		p.FlushInterval = 10 * time.Second
		p.SeriesIdle = int64(15 * time.Second)
	}))
	send := func(input []ptrace.Traces) (spans int64) {
		e.consume(t, input...)
		for _, td := range input {
			spans += int64(td.SpanCount())
		}
		return spans
	}
	flushed := func() int64 {
		n, _ := calls(e.flush(t))
		return n
	}
	// benchInput repeats no series within a request; few's series are a subset of all's.
	all, few := benchInput(nSeries, 1000), benchInput(1000, 1000)
	sent := send(all)
	require.Equal(t, sent, flushed())
	require.GreaterOrEqual(t, e.agg.liveSeries(), touchMinSeries, "the read-ahead ran")
	chunks := len(e.agg.tables[0].keys.chunks)
	for range 3 { // the idle series expire, then their keys are compacted away
		sent = send(few)
		require.Equal(t, sent, flushed())
	}
	require.Equal(t, 1000, e.agg.tables[0].n)
	require.Less(t, len(e.agg.tables[0].keys.chunks), chunks, "the arena was compacted")
	sent = send(few)  // below touchMinSeries again: no read-ahead
	sent += send(all) // crosses it while coming back over the freed ids
	require.Equal(t, sent, flushed())
	require.Equal(t, nSeries, e.agg.tables[0].n)
}
