package testservice

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
// for it and gets it once released, before the holder can take it again a moment later; a wait
// past its bound fails naming the holder.
func TestServiceLockKeepsOtherProcessesOut(t *testing.T) {
	t.Setenv("OTELCOL_RED_STATE", t.TempDir())
	unlock, err := lockService("svc", "TestHolder", time.Second)
	require.NoError(t, err)

	// flock is per open file, so a second open in this process stands for another process.
	_, err = lockService("svc", "TestGivesUp", 300*time.Millisecond)
	require.Error(t, err, "the lock is held")
	require.Contains(t, err.Error(), "TestHolder")

	got := make(chan func(), 1)
	go func() {
		unlock2, err := lockService("svc", "TestWaiter", 10*time.Second)
		assert.NoError(t, err)
		got <- unlock2
	}()
	select {
	case <-got:
		t.Fatal("took a held lock")
	case <-time.After(200 * time.Millisecond):
	}
	unlock()
	// The holder's next test asks again a moment after its release: the waiter has it by then.
	time.Sleep(50 * time.Millisecond)
	_, err = lockService("svc", "TestHolderAgain", 100*time.Millisecond)
	require.Error(t, err, "the waiter took the lock at its release")
	require.Contains(t, err.Error(), "TestWaiter")
	unlock2 := <-got
	require.NotNil(t, unlock2)
	unlock2()
	again, err := lockService("svc", "TestHolderAgain", time.Second)
	require.NoError(t, err, "free once the waiter released it")
	again()
}
