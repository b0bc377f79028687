// Package scaling runs the scaling plan: the decode floor, ours and the stock twin at several
// scheduler widths (GOMAXPROCS), each pinned to as many CPUs, and writes SCALING.md.
package scaling

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

// The scaling plan runs the decode floor, ours and the stock twin at several scheduler widths
// (GOMAXPROCS), one collector at a time on the same pre-encoded requests, each pinned to as many
// CPUs as its GOMAXPROCS with the load generator on the others. It is the floor probe
// (solo.RunFloor) with a third side and one probe per width, so a width's three sides see the same
// host state within a round and the report can set ours against both the decode-bound maximum
// and stock.

// Kind is the scaling plan's probe kind: the floor probe with the stock twin as a third side, at
// one GOMAXPROCS.
const Kind solo.ProbeKind = "scaling"

// ScalingProcs are the widths the scaling plan knows; a host runs those it has CPUs for.
var ScalingProcs = []int{1, 2, 4, 8}

// DefaultScalingProcs returns the ScalingProcs that leave at least one of cpus to the load
// generator, and 1 at least.
func DefaultScalingProcs(cpus int) []int {
	var out []int
	for _, n := range ScalingProcs {
		if n <= cpus-1 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		out = []int{1}
	}
	return out
}

// scalingShapes are the cardinalities the scaling plan knows, by the names ParseShapes reads.
var scalingShapes = map[string]harness.Shape{"1k": harness.Shape1k, "100k": harness.Shape100k, "1m": harness.Shape1M}

// ParseShapes reads a list of scaling shapes like "1k,100k": each one of 1k, 100k and 1m (any
// case), no repeats, measured in the order given.
func ParseShapes(s string) ([]harness.Shape, error) {
	var out []harness.Shape
	for f := range strings.SplitSeq(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		sh, ok := scalingShapes[f]
		if !ok {
			return nil, fmt.Errorf("-scaling-series: %q is not one of 1k, 100k, 1m", f)
		}
		if slices.Contains(out, sh) {
			return nil, fmt.Errorf("-scaling-series: %s is listed twice", f)
		}
		out = append(out, sh)
	}
	return out, nil
}

// PlanConfig sizes the scaling plan.
type PlanConfig struct {
	// Procs are the GOMAXPROCS values, one probe each, in this order.
	Procs []int
	// FlushInterval is the run's flush interval; the warm-up is one flush and 5 s.
	FlushInterval time.Duration
	// Phase is the measured window per collector and shape.
	Phase time.Duration
	// Rounds is how many times each side runs per width and shape (0: 1).
	Rounds int
	// Concurrency is the OTLP requests in flight at GOMAXPROCS 1; a width N gets N times as
	// many, so that a wider collector is not left waiting for requests.
	Concurrency int
	// Shapes are the cardinalities measured at each width, in this order (nil: 1k and 100k).
	Shapes []harness.Shape
	// With1M adds the million-series shape (Shape1M) after Shapes, unless they have it.
	With1M bool
}

// Plan returns one probe per width: floor, ours and stock at max rate, each shape in turn.
func Plan(c PlanConfig) []solo.Probe {
	shapes := c.Shapes
	if len(shapes) == 0 {
		shapes = []harness.Shape{harness.Shape1k, harness.Shape100k}
	}
	if c.With1M && !slices.Contains(shapes, harness.Shape1M) {
		shapes = append(slices.Clip(shapes), harness.Shape1M)
	}
	out := make([]solo.Probe, 0, len(c.Procs))
	for _, n := range c.Procs {
		out = append(out, solo.Probe{
			Name: fmt.Sprintf("scaling-gomaxprocs-%d", n), Kind: Kind, Shapes: shapes,
			Sides: []string{"floor", "ours", "stock"}, Window: c.Phase, Warmup: c.FlushInterval + 5*time.Second,
			GOMAXPROCS: strconv.Itoa(n), PinCPU: true, SpansPerRequest: 1000, Rounds: max(c.Rounds, 1),
			Concurrency: max(c.Concurrency, 1) * n,
		})
	}
	return out
}

// Title describes a probe of the plan in one line.
func Title(p solo.Probe) string {
	return fmt.Sprintf("GOMAXPROCS=%s, max OTLP rate (%d requests in flight) at %s, %s per collector and shape after a warm-up of %s, "+
		"%d round(s) in the order %s, reversed on even rounds", p.GOMAXPROCS, p.Concurrency, shapeList(p.Shapes), p.Window, p.Warmup,
		p.RoundCount(), strings.Join(p.Sides, ", ")) + p.Pinning()
}

// Collectors are the plan's sides.
type Collectors struct {
	Floor, Ours, Stock harness.Collector
}

// Run runs p, a probe of the plan, and returns what it measured. Pools come from pools (built on
// first use).
func Run(ctx context.Context, p solo.Probe, pc Collectors, pools *solo.Pools, o harness.Options) *solo.ProbeResult {
	cs := solo.Collectors{"floor": pc.Floor, "ours": pc.Ours, "stock": pc.Stock}
	return solo.RunProbe(p, Title(p), o, func(o harness.Options, res *solo.ProbeResult) error {
		return solo.RunFloor(ctx, p, cs, pools, o, res)
	})
}

// shapeList writes shapes as "1k series, 100k series".
func shapeList(shapes []harness.Shape) string {
	s := make([]string, len(shapes))
	for i, sh := range shapes {
		s[i] = sh.String()
	}
	return strings.Join(s, ", ")
}
