package probes

import (
	"context"
	"fmt"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

// Collectors are the binaries and configs a probe can run.
type Collectors struct {
	Ours, Stock, Floor harness.Collector
	// OursMemory is ours for KindMemory: series caps lifted to match the stock side, which has
	// none, and the pprof extension for the heap profile.
	OursMemory harness.Collector
	// OursKafka is our Kafka gateway config, for KindStaleness.
	OursKafka harness.Collector
}

// sides names the collectors for a probe of kind: ours is OursMemory in the memory probe and
// OursKafka in the staleness probe.
func (pc Collectors) sides(kind solo.ProbeKind) solo.Collectors {
	ours := pc.Ours
	switch kind {
	case KindMemory:
		ours = pc.OursMemory
	case KindStaleness:
		ours = pc.OursKafka
	}
	return solo.Collectors{"ours": ours, "stock": pc.Stock, "floor": pc.Floor}
}

// Run runs p and returns what it measured. Pools come from pools (built on first use).
func Run(ctx context.Context, p solo.Probe, pc Collectors, pools *solo.Pools, o Options) *solo.ProbeResult {
	return solo.RunProbe(p, Title(p), o.Options, func(ho harness.Options, res *solo.ProbeResult) error {
		o.Options = ho
		cs := pc.sides(p.Kind)
		switch p.Kind {
		case KindMemory:
			return runMemory(ctx, p, cs, pools, o, res)
		case KindScrapeLoad:
			return runScrapeLoad(ctx, p, cs, pools, o.Options, res)
		case KindFloor:
			return solo.RunFloor(ctx, p, cs, pools, o.Options, res)
		case KindStaleness:
			return runStaleness(ctx, p, cs, pools, o.Options, res)
		}
		return fmt.Errorf("unknown probe kind %q", p.Kind)
	})
}
