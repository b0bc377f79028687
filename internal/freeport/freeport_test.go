package freeport

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAddrsAreDistinctBindableAndBelowTheEphemeralRange(t *testing.T) {
	addrs, err := Addrs(50)
	require.NoError(t, err)
	require.Len(t, addrs, 50)
	seen := map[string]bool{}
	for _, a := range addrs {
		require.False(t, seen[a], "%s handed out twice", a)
		seen[a] = true
		_, p, err := net.SplitHostPort(a)
		require.NoError(t, err)
		port, err := strconv.Atoi(p)
		require.NoError(t, err)
		if ephemeralLow()-low >= 1000 {
			require.GreaterOrEqual(t, port, low)
			require.Less(t, port, ephemeralLow(), "a client's connect could take %d", port)
		}
		l, err := net.Listen("tcp", a)
		require.NoError(t, err, "%s is free", a)
		require.NoError(t, l.Close())
	}
}

func TestAddrsSkipsAPortThatIsTaken(t *testing.T) {
	first, err := Addr()
	require.NoError(t, err)
	// Take the port the sequence offers next; it must be skipped, not handed out.
	mu.Lock()
	taken := "127.0.0.1:" + strconv.Itoa(next)
	mu.Unlock()
	l, err := net.Listen("tcp", taken)
	require.NoError(t, err)
	defer l.Close()
	second, err := Addr()
	require.NoError(t, err)
	require.NotEqual(t, taken, second)
	require.NotEqual(t, first, second)
}

func TestKernelAddrsAreDistinct(t *testing.T) {
	addrs, err := kernelAddrs(5)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, a := range addrs {
		require.False(t, seen[a])
		seen[a] = true
	}
}
