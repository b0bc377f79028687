package solo

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// pprofEnv is the environment variable the testbed's pprof configs read the extension's endpoint
// from.
const pprofEnv = "PPROF_ENDPOINT"

// pprofOverlay enables the pprof extension on the endpoint the testbed picked for the collector.
const pprofOverlay = `# Written by the testbed for a collector it profiles (-cpu-profile): merged over the
# collector's own config, lists appended, so service::extensions gains pprof.
extensions:
  pprof:
    endpoint: ${env:` + pprofEnv + `}
service:
  extensions: [pprof]
`

// withPprof returns c with the pprof overlay, written into dir.
func withPprof(c harness.Collector, dir string) (harness.Collector, error) {
	path := filepath.Join(dir, "pprof-overlay.yaml")
	if err := os.WriteFile(path, []byte(pprofOverlay), 0o644); err != nil {
		return c, fmt.Errorf("cannot write the pprof overlay: %w", err)
	}
	c.Overlays = append(slices.Clip(c.Overlays), path)
	return c, nil
}
