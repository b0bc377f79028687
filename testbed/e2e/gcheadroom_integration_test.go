//go:build integration

package e2e

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestGCHeadroomThroughTheBinary runs configs/default.yaml, which carries the gcheadroom
// extension, twice: as shipped, where the collector's small live heap (the 32 MiB reserved
// headroom included) is below the 64 MiB headroom and GOGC applies as it is; and with
// max_headroom_mib lowered to 1 MiB, where any live heap over 4 MiB asks for less than 25% and
// the extension sets its floor, min_gc_percent.
// Both read the extension's own telemetry, from the real runtime.
func TestGCHeadroomThroughTheBinary(t *testing.T) {
	gogc := 100
	if v := os.Getenv("GOGC"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("GOGC=%q: this test needs a numeric GOGC or none", v)
		}
		gogc = n
	}
	// Without GOGC in the environment the shipped config reserves 32 MiB of headroom, which
	// the collector counts live; with max_headroom_mib: 1 it reserves 1 MiB.
	reserved := 0.0
	if _, set := os.LookupEnv("GOGC"); !set {
		reserved = 32 << 20
	}
	for _, tc := range []struct {
		name    string
		overlay string
		want    float64
		minLive float64
	}{
		{"as shipped", "", float64(gogc), max(1, reserved)},
		{"headroom of 1 MiB", "extensions:\n  gcheadroom:\n    max_headroom_mib: 1\n    min_gc_percent: 25\n", float64(min(25, gogc)), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, _ := defaultEnv(t)
			var overlays []string
			if tc.overlay != "" {
				overlays = overlayFiles(t, tc.overlay)
			}
			StartCollector(t, configPath("default.yaml"), env, overlays...)
			url := telemetryURLOf(env)
			var percent, live float64
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				fams, err := scrape(url)
				if err != nil {
					continue
				}
				percent, _ = SumSeries(fams, "otelcol_extension_gcheadroom_gc_percent", nil)
				live, _ = SumSeries(fams, "otelcol_extension_gcheadroom_live_heap_bytes", nil)
				if live >= tc.minLive && percent == tc.want {
					break
				}
			}
			require.GreaterOrEqual(t, live, tc.minLive, "the live heap the extension read")
			require.Equal(t, tc.want, percent, "GC percent (live heap %.0f bytes)", live)
		})
	}
}

// TestGCHeadroomCountsOffHeapUnderGOMEMLIMIT: with GOMEMLIMIT set, once cachedprom holds
// series (mapped outside the Go heap), the Go memory limit in effect is GOMEMLIMIT less
// those bytes, as the extension reports both.
func TestGCHeadroomCountsOffHeapUnderGOMEMLIMIT(t *testing.T) {
	const limit = 1 << 30
	env, _ := defaultEnv(t)
	env["GOMEMLIMIT"] = "1GiB"
	StartCollector(t, configPath("default.yaml"), env)
	sendUniqueSpanNames(t, env["OTLP_GRPC_ENDPOINT"], 20, 1000)
	url := telemetryURLOf(env)
	var off, got float64
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		fams, err := scrape(url)
		if err != nil {
			continue
		}
		off, _ = SumSeries(fams, "otelcol_extension_gcheadroom_off_heap_bytes", nil)
		got, _ = SumSeries(fams, "otelcol_extension_gcheadroom_memory_limit_bytes", nil)
		if off > 0 && got > 0 && limit-got >= off-(1<<20) && limit-got <= off+(1<<20) {
			break
		}
	}
	require.Positive(t, off, "bytes mapped off the Go heap once cachedprom holds 20,000 series")
	require.InDelta(t, limit-off, got, 1<<20, "the Go memory limit: GOMEMLIMIT less the off-heap bytes (within the 1 MiB step)")
	t.Logf("off the heap %.0f bytes, Go memory limit %.0f bytes", off, got)
}
