package testservice

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// A service is one process on fixed ports under one state folder, so two test processes on one
// machine (make e2e runs the end-to-end suite as two) must never hold it at once: the second
// start would stop the first's broker in the middle of its test. Start therefore holds the
// service's lock, a flock on <state>/<name>.lock, from before the start until after the stop.
// The kernel lets go of it when the process dies, so a killed run never leaves it held.

// lockTimeout bounds the wait for a service another process holds: the longest test of make test
// holds one about two minutes, the long fault forms (make test-faults-full) about sixteen.
const lockTimeout = 20 * time.Minute

// lockPoll is how often a waiting process tries the lock again.
const lockPoll = 100 * time.Millisecond

// stateDir is the scripts' state folder (scripts/lib.sh): $OTELCOL_RED_STATE, else
// .cache/services under the repository root.
func stateDir() string {
	if dir := os.Getenv("OTELCOL_RED_STATE"); dir != "" {
		return dir
	}
	return filepath.Join(Root(), ".cache", "services")
}

// lockService takes the lock of service name, waiting at most timeout for another process to
// release it, and writes holder into the lock file so that a process kept waiting can say who
// holds it. It returns the function that releases it.
func lockService(name, holder string, timeout time.Duration) (unlock func(), err error) {
	if err := os.MkdirAll(stateDir(), 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(stateDir(), name+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || !time.Now().Before(deadline) {
			held, _ := os.ReadFile(path)
			_ = f.Close()
			return nil, fmt.Errorf("cannot lock %s (held by %s) within %s: %w", path, strings.TrimSpace(string(held)), timeout, err)
		}
		time.Sleep(lockPoll)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d, %s\n", os.Getpid(), holder)), 0)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
