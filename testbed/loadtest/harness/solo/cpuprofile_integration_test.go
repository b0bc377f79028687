//go:build integration

package solo

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// TestCPUProfileThroughTheOverlay starts the built binaries with their shipped configs, which do
// not enable pprof, and takes a CPU profile of each through the overlay that -cpu-profile adds.
func TestCPUProfileThroughTheOverlay(t *testing.T) {
	root, err := filepath.Abs("../../../..")
	require.NoError(t, err)
	for _, c := range []harness.Collector{
		{Name: "ours", Binary: filepath.Join(root, "bin/otelcol-red"), Config: filepath.Join(root, "configs/default.yaml")},
		{Name: "floor", Binary: filepath.Join(root, "bin/otelcol-red"), Config: filepath.Join(root, "testbed/configs/floor.yaml")},
		{Name: "stock", Binary: filepath.Join(root, "bin/otelcol-stock"), Config: filepath.Join(root, "configs/stock-twin.yaml")},
	} {
		t.Run(c.Name, func(t *testing.T) {
			_, err := os.Stat(c.Binary)
			require.NoError(t, err, "build the binaries first: make build stock-twin")
			o := harness.Options{RawDir: t.TempDir(), SampleInterval: time.Second, FlushInterval: time.Second, CPUProfile: time.Second}
			s, err := Start(context.Background(), c, o, c.Name, nil, 0)
			require.NoError(t, err)
			run := &ProbeRun{}
			StartCPUProfile(context.Background(), s, o, c.Name, 5*time.Second, run)()
			_, err = s.Stop()
			require.NoError(t, err)
			require.Empty(t, run.Error)
			assert.Equal(t, filepath.Join(o.RawDir, c.Name+"-cpu.pb.gz"), run.CPUProfile)
			body, err := os.ReadFile(run.CPUProfile)
			require.NoError(t, err)
			require.Greater(t, len(body), 2)
			assert.Equal(t, []byte{0x1f, 0x8b}, body[:2], "a gzipped profile")
			assert.Contains(t, run.CPUTop, "Type: cpu", "go tool pprof read it")
			// pprof prints the wall time the profile covered: the one second asked for, which may
			// read 999.29ms, or more on a loaded host; an ignored seconds parameter would give 30s.
			m := regexp.MustCompile(`Duration: (\S+),`).FindStringSubmatch(run.CPUTop)
			require.Len(t, m, 2, "a Duration line in %q", run.CPUTop)
			d, err := time.ParseDuration(m[1])
			require.NoError(t, err)
			assert.True(t, d >= 500*time.Millisecond && d <= 5*time.Second, "the profile covers the second asked for, not %v", d)
		})
	}
}
