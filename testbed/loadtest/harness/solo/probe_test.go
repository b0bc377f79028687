package solo

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseProcs(t *testing.T) {
	got, err := ParseProcs("1,2, 4,8")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 4, 8}, got)
	got, err = ParseProcs("4,1")
	require.NoError(t, err)
	assert.Equal(t, []int{4, 1}, got, "the order given is the order run")

	for _, bad := range []string{"", "0", "-1", "two", "1,,2", "2,2"} {
		_, err := ParseProcs(bad)
		require.ErrorContains(t, err, "-procs", "%q", bad)
	}
}

func TestProbePinned(t *testing.T) {
	assert.Equal(t, 0, Probe{GOMAXPROCS: "4"}.Pinned())
	assert.Equal(t, 4, Probe{GOMAXPROCS: "4", PinCPU: true}.Pinned())
	assert.Equal(t, 1, Probe{PinCPU: true}.Pinned())
	assert.Equal(t, 1, Probe{GOMAXPROCS: "x", PinCPU: true}.Pinned())
}
