//go:build integration

package testservice

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRedisStartStop proves the service recipe end to end on the simplest service.
func TestRedisStartStop(t *testing.T) {
	addr := Start(t, "redis")
	require.Equal(t, "127.0.0.1:16379", addr)
	out, err := Run("redis", "cli", "ping")
	require.NoError(t, err)
	require.Equal(t, "PONG", out)
}
