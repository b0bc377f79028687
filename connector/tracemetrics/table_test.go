package tracemetrics

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// The comments of seriesTable and the README's per-structure table count a series record as
// 32 bytes: a field added to seriesMeta must show up here.
func TestSeriesMetaIs32Bytes(t *testing.T) {
	require.EqualValues(t, 32, unsafe.Sizeof(seriesMeta{}))
}
