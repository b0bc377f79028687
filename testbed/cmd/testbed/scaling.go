package main

import (
	"context"
	"fmt"
	"log"
	"path/filepath"
	"runtime"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/scaling"
)

// selectScaling returns the scaling plan the flags ask for on a host with cpus CPUs.
func selectScaling(f flags, cpus int) ([]solo.Probe, error) {
	if f.scalingRounds < 1 {
		return nil, fmt.Errorf("-scaling-rounds must be 1 or more, got %d", f.scalingRounds)
	}
	procs := scaling.DefaultScalingProcs(cpus)
	if f.procs != "" {
		var err error
		if procs, err = solo.ParseProcs(f.procs); err != nil {
			return nil, err
		}
	}
	var shapes []harness.Shape
	if f.scalingSeries != "" {
		var err error
		if shapes, err = scaling.ParseShapes(f.scalingSeries); err != nil {
			return nil, err
		}
	}
	return solo.KeepSides(scaling.Plan(scaling.PlanConfig{
		Procs: procs, FlushInterval: f.flushInterval, Phase: f.phase, Rounds: f.scalingRounds,
		Concurrency: f.concurrency, Shapes: shapes, With1M: f.scaling1M,
	}), f.sides)
}

// runScaling runs the scaling plan and writes <out>/SCALING.md and the raw JSON. It fails when a
// width or a run could not be measured; a collector killed over the RSS cap is a result.
func runScaling(ctx context.Context, f flags) ([]string, error) {
	plan, err := selectScaling(f, runtime.NumCPU())
	if err != nil {
		return nil, err
	}
	pc := scaling.Collectors{
		Ours:  harness.Collector{Name: "ours", Binary: f.oursBin, Config: f.oursConfig},
		Stock: harness.Collector{Name: "stock", Binary: f.stockBin, Config: f.stockConfig},
		Floor: harness.Collector{Name: "floor", Binary: f.oursBin, Config: f.floorConfig},
	}
	o, rawDir, err := f.probeOptions(pc.Ours, pc.Stock, pc.Floor)
	if err != nil {
		return nil, err
	}
	report := &scaling.Report{
		Start: time.Now().UTC(), Machine: harness.ReadMachine(), RSSCapMiB: float64(f.rssCapMiB), FlushInterval: f.flushInterval,
	}
	var failures []string
	report.Results, failures = runPlan(ctx, plan, scaling.Title, func(p solo.Probe, pools *solo.Pools) *solo.ProbeResult {
		return scaling.Run(ctx, p, pc, pools, o)
	}, nil)
	path := filepath.Join(f.out, "SCALING.md")
	if err := writeMarkdown(path, report.WriteMarkdown); err != nil {
		return failures, err
	}
	log.Printf("wrote %s", path)
	if err := writeJSON(filepath.Join(rawDir, "scaling-run-"+report.Start.Format("20060102T150405Z")+".json"), report); err != nil {
		return failures, err
	}
	return failures, ctx.Err()
}

// runPlan runs the probes of plan in turn with run, the pools shared, logging each under its
// title and each of its runs, and returns their results and the failures: a probe's or a run's
// error, and the lines more returns for a run (nil: none).
func runPlan(ctx context.Context, plan []solo.Probe, title func(solo.Probe) string,
	run func(solo.Probe, *solo.Pools) *solo.ProbeResult, more func(solo.ProbeRun) []string,
) ([]*solo.ProbeResult, []string) {
	var (
		results  []*solo.ProbeResult
		failures []string
	)
	pools := &solo.Pools{}
	for _, p := range plan {
		log.Printf("%s: %s", p.Name, title(p))
		res := run(p, pools)
		results = append(results, res)
		if res.Error != "" {
			failures = append(failures, fmt.Sprintf("%s: %s", p.Name, res.Error))
		}
		for _, r := range res.Runs {
			if r.Error != "" {
				failures = append(failures, fmt.Sprintf("%s/%s: %s", p.Name, r.Label(), r.Error))
			}
			if more != nil {
				for _, line := range more(r) {
					failures = append(failures, fmt.Sprintf("%s/%s: %s", p.Name, r.Label(), line))
				}
			}
			log.Printf("%s/%s: %s", p.Name, r.Label(), r.Summary())
		}
		if ctx.Err() != nil {
			break
		}
	}
	return results, failures
}
