// Package native runs the native histogram probe: ours with exponential histograms served as
// Prometheus native histograms, ours with classic ones and the stock twin with exponential ones,
// one at a time on the same requests, and writes NATIVE.md.
package native

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

// Kind is the native histogram probe's kind.
const Kind solo.ProbeKind = "native"

// PlanConfig sizes the native histogram probe.
type PlanConfig struct {
	// FlushInterval is the run's flush interval; the warm-up is one flush and 5 s.
	FlushInterval time.Duration
	// Phase is the measured load window per side.
	Phase time.Duration
	// Scrapes is how many scrapes are timed per side and format.
	Scrapes int
}

// Plan is the probe `make testbed-native` runs: 100k series, ours with exponential
// histograms, ours with classic ones and the stock twin with exponential ones, one at a time.
func Plan(c PlanConfig) []solo.Probe {
	return []solo.Probe{{
		Name: "native-100k", Kind: Kind, Shapes: []harness.Shape{harness.Shape100k}, Sides: []string{"ours", "ours-classic", "stock"},
		Window: c.Phase, Warmup: c.FlushInterval + 5*time.Second, SpansPerRequest: 1000, TimedScrapes: max(c.Scrapes, 1),
	}}
}

// Collectors are the probe's sides.
type Collectors struct {
	// Ours serves exponential histograms, OursClassic classic ones; Stock is the stock twin with
	// exponential histograms.
	Ours, OursClassic, Stock harness.Collector
}

// Title describes the probe in one line.
func Title(p solo.Probe) string {
	return fmt.Sprintf("%s, max OTLP rate: warm-up %s, %s measured, then idle for one flush and 5 s, then %d gzip scrapes, one a second or back to back when slower, "+
		"per side (protobuf as Prometheus 3 asks with native histograms for %s, text for %s)", p.Shapes[0], p.Warmup, p.Window,
		p.TimedScrapes, strings.Join(sidesScrapedIn(p.Sides, solo.FormatProtobuf), ", "), strings.Join(sidesScrapedIn(p.Sides, solo.FormatText), ", ")) +
		p.Pinning()
}

// Run runs p and returns what it measured. Pools come from pools (built on first use).
func Run(ctx context.Context, p solo.Probe, pc Collectors, pools *solo.Pools, o harness.Options) *solo.ProbeResult {
	cs := solo.Collectors{"ours": pc.Ours, "ours-classic": pc.OursClassic, "stock": pc.Stock}
	return solo.RunProbe(p, Title(p), o, func(o harness.Options, res *solo.ProbeResult) error {
		return runNative(ctx, p, cs, pools, o, res)
	})
}
