// Package solo runs one collector at a time, alone on the host, and measures it in phases: the
// runner that the memory and overload probes, the scaling plan, the service graph scenario and
// the native histogram probe share. The comparison scenarios put two collectors side by side
// instead; a probe at a million series cannot, because two such processes together would not fit
// in the host's memory.
package solo

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// ProbeKind says what a probe measures; each mode defines its own.
type ProbeKind string

// Probe is one scenario a mode runs collector after collector. The fields a kind does not use are
// left zero.
type Probe struct {
	Name string    `json:"name"`
	Kind ProbeKind `json:"kind"`
	// Shapes is the cardinality; the floor and the scaling probes run each in turn, the others
	// take the first.
	Shapes []harness.Shape `json:"shapes"`
	// Sides names the collectors measured, one after the other: "ours", "stock", "floor".
	Sides []string `json:"sides"`
	// Window is the load window (the memory probe) or the length of each phase (the others).
	Window time.Duration `json:"window_ns"`
	// MaxWindow extends a memory probe's load beyond Window, up to this, until three flushes were
	// delivered.
	MaxWindow time.Duration `json:"max_window_ns,omitempty"`
	// Warmup is load sent before the first phase so that every series exists and has been flushed.
	Warmup time.Duration `json:"warmup_ns,omitempty"`
	// Scrapers is the number of clients scraping back to back in the last phase of the
	// scrape-load probe; Gzip says whether they ask for gzip.
	Scrapers int  `json:"scrapers,omitempty"`
	Gzip     bool `json:"gzip,omitempty"`
	// ScrapeEvery adds, before the back-to-back phase of the scrape-load probe, a phase with one
	// client scraping at this period, the way Prometheus does.
	ScrapeEvery time.Duration `json:"scrape_every_ns,omitempty"`
	// GOMAXPROCS overrides the collectors' scheduler width ("1" for the floor).
	GOMAXPROCS string `json:"gomaxprocs,omitempty"`
	// PinCPU runs each collector alone on as many CPUs as its GOMAXPROCS (one when unset) and the
	// testbed (load generator, scrapers) on the others, so the probe measures what the collector
	// spends, not its share of contested CPUs.
	PinCPU bool `json:"pin_cpu,omitempty"`
	// Concurrency overrides the run's OTLP requests in flight; 0 keeps it.
	Concurrency int `json:"concurrency,omitempty"`
	// SpansPerRequest sizes the requests or Kafka messages.
	SpansPerRequest int `json:"spans_per_request"`
	// Backlog is the spans written to the topic before the collector starts (the staleness probe).
	Backlog int64 `json:"backlog,omitempty"`
	// FlushInterval overrides the run's flush interval.
	FlushInterval time.Duration `json:"flush_interval_ns,omitempty"`
	// Rounds is how many times a probe that runs in rounds (EachRound) measures each side at each
	// shape, the sides interleaved round after round (see RoundOrder); 0 counts as 1. One phase
	// per side is too noisy on a shared host to compare two collectors whose costs differ by tens
	// of percent.
	Rounds int `json:"rounds,omitempty"`
	// TimedScrapes is how many scrapes the native probe times per side and format.
	TimedScrapes int `json:"timed_scrapes,omitempty"`
}

// Pinned returns the CPUs a collector of p runs alone on: 0 without PinCPU, else its GOMAXPROCS
// (1 when unset or not a number).
func (p Probe) Pinned() int {
	if !p.PinCPU {
		return 0
	}
	if n, err := strconv.Atoi(p.GOMAXPROCS); err == nil && n > 0 {
		return n
	}
	return 1
}

// RoundCount returns p.Rounds, at least 1.
func (p Probe) RoundCount() int {
	return max(p.Rounds, 1)
}

// Env is the environment p gives its collectors on top of their endpoints.
func (p Probe) Env() map[string]string {
	env := map[string]string{}
	if p.GOMAXPROCS != "" {
		env["GOMAXPROCS"] = p.GOMAXPROCS
	}
	return env
}

// Pinning is what a pinned probe's title adds about where its collectors ran; "" when unpinned.
func (p Probe) Pinning() string {
	n := p.Pinned()
	if n == 0 {
		return ""
	}
	cpus := "one CPU"
	if n > 1 {
		cpus = fmt.Sprintf("%d CPUs", n)
	}
	return fmt.Sprintf("; each collector (GOMAXPROCS=%s) alone on %s, the load generator and scrapers on the others", p.GOMAXPROCS, cpus)
}

// RoundOrder returns the order in which round (1-based) runs sides: as listed on odd rounds,
// reversed on even ones, so that over the rounds neither side always follows the other (a host
// that slows down or speeds up during the probe then weighs on both sides alike).
func RoundOrder(sides []string, round int) []string {
	out := append([]string(nil), sides...)
	if round%2 == 0 {
		slices.Reverse(out)
	}
	return out
}

// KeepSides keeps, of each probe of plan, only the sides named in sides (comma-separated "ours",
// "stock", "floor"), and drops the probes left with none. An empty sides keeps plan as it is.
func KeepSides(plan []Probe, sides string) ([]Probe, error) {
	if sides == "" {
		return plan, nil
	}
	keep := map[string]bool{}
	for name := range strings.SplitSeq(sides, ",") {
		name = strings.TrimSpace(name)
		if name != "ours" && name != "stock" && name != "floor" {
			return nil, fmt.Errorf("-sides: %q is not a collector, use ours, stock or floor", name)
		}
		keep[name] = true
	}
	var out []Probe
	for _, p := range plan {
		var kept []string
		for _, side := range p.Sides {
			if keep[side] {
				kept = append(kept, side)
			}
		}
		if len(kept) > 0 {
			p.Sides = kept
			out = append(out, p)
		}
	}
	return out, nil
}

// ParseProcs reads a list of widths like "1,2,4,8": each a positive integer, no repeats, run in
// the order given.
func ParseProcs(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-procs: %q is not a positive number of CPUs", f)
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("-procs: %d is listed twice", n)
		}
		out = append(out, n)
	}
	return out, nil
}
