package solo

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

func TestRSSAndCPUBetween(t *testing.T) {
	samples := []harness.Sample{{At: 1, RSSMiB: 100, CPUPercent: 50}, {At: 2, RSSMiB: 300, CPUPercent: 150}, {At: 3, RSSMiB: 200, CPUPercent: 100}}
	maxMiB, last := RSSBetween(samples, 1.5, 4)
	assert.InDelta(t, 300.0, maxMiB, 1e-9)
	assert.InDelta(t, 200.0, last, 1e-9)
	assert.InDelta(t, 125.0, CPUBetween(samples, 1.5, 4), 1e-9)
	assert.Zero(t, CPUBetween(samples, 10, 20))
}

// TestRSSWatchKillsOverCap runs a process that outlives the test unless the watch kills it: with
// a cap of one byte the first reading must kill it and record the reading.
func TestRSSWatchKillsOverCap(t *testing.T) {
	proc := startSleeper(t)
	w := newRSSWatch(proc, 10*time.Millisecond, 1)
	select {
	case <-w.Killed():
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not kill a process over the cap")
	}
	assert.True(t, w.close())
	k, ok := w.KilledAt()
	require.True(t, ok)
	assert.Positive(t, k.RSSMiB)
	exited, _ := proc.Exited()
	assert.True(t, exited)
}

func TestRSSWatchLeavesProcessUnderCap(t *testing.T) {
	proc := startSleeper(t)
	w := newRSSWatch(proc, 10*time.Millisecond, 1<<40)
	require.Eventually(t, func() bool { return len(w.Samples()) >= 3 }, 10*time.Second, 10*time.Millisecond)
	assert.False(t, w.close())
	exited, _ := proc.Exited()
	assert.False(t, exited)
	// sleep ends by SIGTERM, which Stop does not count as an error.
	require.NoError(t, proc.Stop())
}

// startSleeper starts a stand-in collector that sleeps for a minute, unless stopped or killed.
func startSleeper(t *testing.T) *harness.Process {
	dir := t.TempDir()
	script := filepath.Join(dir, "collector")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755))
	proc, err := harness.StartCollector(harness.Collector{Name: "fake", Binary: script, Config: "unused"}, nil, filepath.Join(dir, "log"), nil)
	require.NoError(t, err)
	return proc
}
