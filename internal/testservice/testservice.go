// Package testservice starts the real services that integration tests need (Kafka, Prometheus,
// Redis, Elasticsearch) through the repository's scripts/, so tests and humans use one recipe.
//
// A service that cannot start fails the test: integration tests never skip for a missing service.
package testservice

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// startTimeout bounds a script's start: the first start on a fresh machine installs packages or
// downloads Maven jars, later starts take seconds.
const startTimeout = 10 * time.Minute

// Root returns the repository root: the folder holding scripts/ and builder-config.yaml.
func Root() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("BUG: runtime.Caller failed")
	}
	// file is <root>/internal/testservice/testservice.go
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Start runs `scripts/<name>.sh start [args...]`, fails tb if it fails, and stops the service
// when the test ends. It returns what the script printed on stdout (its address), trimmed. It
// holds the service's lock from before the start to after the stop (lock.go), waiting for a
// test of another process that holds it.
func Start(tb testing.TB, name string, args ...string) string {
	tb.Helper()
	unlock, err := lockService(name, tb.Name(), lockTimeout)
	if err != nil {
		tb.Fatalf("cannot start %s: %v", name, err)
	}
	tb.Cleanup(unlock) // runs after the stop below: cleanups run last registered first
	out, err := Run(name, append([]string{"start"}, args...)...)
	if err != nil {
		tb.Fatalf("cannot start %s: %v", name, err)
	}
	tb.Cleanup(func() {
		if _, err := Run(name, "stop"); err != nil {
			tb.Errorf("cannot stop %s: %v", name, err)
		}
	})
	return out
}

// Stop runs `scripts/<name>.sh stop` and fails tb if it fails; for fault tests that stop a
// service in the middle of a run.
func Stop(tb testing.TB, name string) {
	tb.Helper()
	if _, err := Run(name, "stop"); err != nil {
		tb.Fatalf("cannot stop %s: %v", name, err)
	}
}

// Run runs `scripts/<name>.sh args...` with the test's environment and returns its trimmed
// stdout; the error carries the script's stderr so a failing start explains itself.
func Run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	script := filepath.Join(Root(), "scripts", name+".sh")
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	cmd.Dir = Root()
	cmd.Env = os.Environ()
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", &scriptError{script: script, args: args, err: err, stderr: tail(stderr.String(), 4000)}
	}
	return strings.TrimSpace(stdout.String()), nil
}

type scriptError struct {
	script string
	args   []string
	err    error
	stderr string
}

func (e *scriptError) Error() string {
	return "cannot run " + e.script + " " + strings.Join(e.args, " ") + ": " + e.err.Error() + "\n" + e.stderr
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
