package testservice

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRootHoldsScripts(t *testing.T) {
	_, err := os.Stat(filepath.Join(Root(), "scripts", "lib.sh"))
	require.NoError(t, err)
}

func TestRunReportsScriptFailure(t *testing.T) {
	// A missing script must fail loudly with the script's path, never pass silently.
	_, err := Run("no-such-service", "start")
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "no-such-service.sh"), err.Error())
}

// TestServiceLockKeepsOtherProcessesOut: while one process holds a service's lock another waits
// for it, and gets it once released; a wait past its bound fails naming the holder.
func TestServiceLockKeepsOtherProcessesOut(t *testing.T) {
	t.Setenv("OTELCOL_RED_STATE", t.TempDir())
	unlock, err := lockService("svc", "TestHolder", time.Second)
	require.NoError(t, err)

	// flock is per open file, so a second open in this process stands for another process.
	_, err = lockService("svc", "TestWaiter", 300*time.Millisecond)
	require.Error(t, err, "the lock is held")
	require.Contains(t, err.Error(), "TestHolder")

	got := make(chan error, 1)
	go func() {
		unlock2, err := lockService("svc", "TestWaiter", 10*time.Second)
		if err == nil {
			unlock2()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("took a held lock: %v", err)
	case <-time.After(3 * lockPoll):
	}
	unlock()
	require.NoError(t, <-got, "the waiter gets the lock once released")
}
