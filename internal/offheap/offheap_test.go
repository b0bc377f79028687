//go:build unix

package offheap

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMapCountsWhatIsMapped(t *testing.T) {
	before := Bytes()
	a, b := Map(1<<20), Map(3<<20)
	require.Len(t, a, 1<<20)
	require.Len(t, b, 3<<20)
	require.Equal(t, before+4<<20, Bytes())
	a[0], b[len(b)-1] = 1, 2 // writable
	Unmap(a)
	require.Equal(t, before+3<<20, Bytes())
	Unmap(b)
	Unmap(nil)
	require.Equal(t, before, Bytes())
}
