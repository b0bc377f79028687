package solo

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

func TestCollectorArgs(t *testing.T) {
	c := harness.Collector{Config: "base.yaml"}
	assert.Equal(t, []string{"--config", "base.yaml"}, c.Args(), "no overlay, no feature gate")

	dir := t.TempDir()
	p, err := withPprof(c, dir)
	require.NoError(t, err)
	overlay := filepath.Join(dir, "pprof-overlay.yaml")
	assert.Equal(t, []string{"--config", "base.yaml", "--config", overlay, "--feature-gates=confmap.enableMergeAppendOption"}, p.Args())
	assert.Empty(t, c.Overlays, "withPprof must not change the collector it was given")
	body, err := os.ReadFile(overlay)
	require.NoError(t, err)
	assert.Contains(t, string(body), "endpoint: ${env:PPROF_ENDPOINT}")
	assert.Contains(t, string(body), "extensions: [pprof]")
}

func TestProfileSeconds(t *testing.T) {
	assert.Equal(t, 10, profileSeconds(harness.Options{CPUProfile: 10 * time.Second}, 30*time.Second))
	assert.Equal(t, 15, profileSeconds(harness.Options{CPUProfile: 30 * time.Second}, 15*time.Second), "no longer than the phase")
	assert.Equal(t, 2, profileSeconds(harness.Options{CPUProfile: 2500 * time.Millisecond}, time.Minute), "whole seconds")
	assert.Equal(t, 1, profileSeconds(harness.Options{CPUProfile: time.Second}, 500*time.Millisecond), "one second at least")
}

func TestWriteCPUProfiles(t *testing.T) {
	var sb strings.Builder
	b := bufio.NewWriter(&sb)
	WriteCPUProfiles(b, []ProbeRun{{Collector: "ours"}}, []string{"ours"})
	require.NoError(t, b.Flush())
	assert.Empty(t, sb.String(), "no section without a profile")

	runs := []ProbeRun{
		{Collector: "floor", CPUProfile: "raw/floor-cpu.pb.gz", CPUTop: "Duration: 10s\n      flat  flat%\n"},
		{Collector: "ours"},
		{Collector: "stock", CPUProfile: "raw/stock-cpu.pb.gz", CPUTop: "stock top"},
	}
	WriteCPUProfiles(b, runs, []string{"A", "B", "C"})
	require.NoError(t, b.Flush())
	out := sb.String()
	assert.Equal(t, 1, strings.Count(out, "### CPU profiles"))
	assert.Contains(t, out, "A (`raw/floor-cpu.pb.gz`)")
	assert.Contains(t, out, "C (`raw/stock-cpu.pb.gz`):\n\n```\nstock top\n```")
	assert.NotContains(t, out, "B (")
}
