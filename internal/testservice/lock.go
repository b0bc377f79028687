package testservice

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
//
// A waiter blocks in the kernel rather than polling: a release wakes it at once, while the
// releasing process's next test asks again only milliseconds later, so the lock passes to the
// waiter. With a poll the holder's next test would take it again nearly every time, and a test of
// the other process could wait through all of the holder's tests of that service.
func lockService(name, holder string, timeout time.Duration) (unlock func(), err error) {
	if err := os.MkdirAll(stateDir(), 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(stateDir(), name+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := waitForLock(f, timeout); err != nil {
		held, _ := os.ReadFile(path)
		return nil, fmt.Errorf("cannot lock %s (held by %s) within %s: %w", path, strings.TrimSpace(string(held)), timeout, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d, %s\n", os.Getpid(), holder)), 0)
	}
	return func() {
		_ = flock(f, syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

// waitForLock takes f's exclusive lock, waiting at most timeout. Past it, the blocked flock is
// left to finish on its own, releasing the lock and closing f when it does; f is closed here only
// when the lock was never waited for.
func waitForLock(f *os.File, timeout time.Duration) error {
	err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		if err != nil {
			_ = f.Close()
		}
		return err
	}
	var mu sync.Mutex
	gaveUp := false
	got := make(chan error, 1)
	go func() {
		err := flock(f, syscall.LOCK_EX)
		mu.Lock()
		defer mu.Unlock()
		if gaveUp {
			_ = f.Close() // releases the lock too, if it was taken
			return
		}
		got <- err
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-got:
		if err != nil {
			_ = f.Close()
		}
		return err
	case <-timer.C:
	}
	mu.Lock()
	defer mu.Unlock()
	select {
	case err := <-got: // taken just as the time ran out
		if err != nil {
			_ = f.Close()
		}
		return err
	default:
		gaveUp = true
		return syscall.EWOULDBLOCK
	}
}

// flock is syscall.Flock on f, retried when a signal interrupts it.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
