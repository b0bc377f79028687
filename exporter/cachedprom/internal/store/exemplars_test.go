package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
)

// TestExemplarsStoredWithoutAllocating: replacing a series' exemplars
// with a point's allocates nothing once the series has held as many: the
// ids are kept as bytes and written as labels only when rendered.
func TestExemplarsStoredWithoutAllocating(t *testing.T) {
	s := newTestStore()
	t.Cleanup(s.Close)
	dp := promtest.ExpPoint{Scale: 2, Pos: []uint64{1}, Sum: 1}.Build()
	for i := range 5 {
		e := dp.Exemplars().AppendEmpty()
		e.SetDoubleValue(float64(i))
		e.SetTraceID(pcommon.TraceID{byte(i), 1})
		e.SetSpanID(pcommon.SpanID{byte(i), 2})
	}
	s.t.exemplars.set(7, dp.Exemplars(), dp.Timestamp())
	allocs := testing.AllocsPerRun(100, func() { s.t.exemplars.set(7, dp.Exemplars(), dp.Timestamp()) })
	assert.Zero(t, allocs)
	require.Len(t, s.t.exemplars[7], 5)
	assert.Equal(t, `span_id="0402000000000000",trace_id="04010000000000000000000000000000"`, string(s.t.exemplars[7][4].AppendLabels(nil)))
}
