package series

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/internal/intake"
)

// A batch taken after a request of 1000 series has its series table sized from the hint
// before it reduces anything (the reducer's part: tracemetrics TestSizeHintsPresizeFreshBatches).
func TestTableSizedFromHint(t *testing.T) {
	h := intake.NewSizeHints(NumHints, HintLimit)
	f := &Family{}
	first := new(Batch)
	first.PrepareTable(0, 0)
	for i := range 1000 {
		off := len(first.Arena)
		first.Arena = append(first.Arena, make([]byte, KeyHeaderLen)...)
		first.Arena = append(first.Arena, byte(i), byte(i>>8))
		first.Upsert(0, f, off, uint64(i)*0x9e3779b97f4a7c15)
	}
	require.Len(t, first.Series, 1000)
	first.Measure(h)

	fresh := new(Batch)
	fresh.Reserve(h)
	fresh.PrepareTable(0, int(h.Get(HintTable)))
	require.GreaterOrEqual(t, cap(fresh.table), 2048, "table sized from the hint")
	require.GreaterOrEqual(t, cap(fresh.Series), 1000, "series sized from the hint")
}
