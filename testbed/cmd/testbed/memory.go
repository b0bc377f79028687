package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"path/filepath"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/probes"
)

// selectProbes returns the memory plan's probes that -run selects.
func selectProbes(f flags) ([]solo.Probe, error) {
	if f.floorRounds < 0 {
		return nil, fmt.Errorf("-floor-rounds must be 1 or more (0 takes the default), got %d", f.floorRounds)
	}
	var procs []int
	if f.memoryProcs != "" {
		var err error
		if procs, err = solo.ParseProcs(f.memoryProcs); err != nil {
			return nil, fmt.Errorf("-memory-procs: %w", err)
		}
	}
	plan := probes.Plan(probes.PlanConfig{
		FlushInterval: f.flushInterval, Phase: f.phase, MemoryWindow: f.memoryWindow, Backlog: f.staleBacklog,
		FloorRounds: f.floorRounds, MemoryProcs: procs, Concurrency: f.concurrency,
	})
	plan, err := selectByName(plan, f.run, func(p solo.Probe) string { return p.Name })
	if err != nil {
		return nil, err
	}
	if plan, err = solo.KeepSides(plan, f.sides); err != nil {
		return nil, err
	}
	if len(plan) == 0 {
		return nil, errors.New("no probe to run")
	}
	return plan, nil
}

// runMemory runs the memory and overload probes and writes <out>/MEMORY.md and the raw JSON. It
// fails when a probe could not be measured; targets missed are results, reported, not failures.
func runMemory(ctx context.Context, f flags) ([]string, error) {
	plan, err := selectProbes(f)
	if err != nil {
		return nil, err
	}
	pc := probes.Collectors{
		Ours:       harness.Collector{Name: "ours", Binary: f.oursBin, Config: f.oursConfig},
		OursMemory: harness.Collector{Name: "ours", Binary: f.oursBin, Config: f.oursMemConfig},
		Stock:      harness.Collector{Name: "stock", Binary: f.stockBin, Config: f.stockConfig},
		Floor:      harness.Collector{Name: "floor", Binary: f.oursBin, Config: f.floorConfig},
		OursKafka:  harness.Collector{Name: "ours", Binary: f.oursBin, Config: f.oursKafka},
	}
	ho, rawDir, err := f.probeOptions(pc.Ours, pc.OursMemory, pc.Stock, pc.Floor, pc.OursKafka)
	if err != nil {
		return nil, err
	}
	o := probes.Options{Options: ho, HeapProfile: f.heapProfile, HeapProfileAtEnd: f.heapAtEnd}
	report := &probes.Report{
		Start: time.Now().UTC(), Machine: harness.ReadMachine(), RSSCapMiB: float64(f.rssCapMiB),
		FlushInterval: f.flushInterval, Concurrency: f.concurrency,
	}
	var failures []string
	pools := &solo.Pools{}
	kafkaReady := false
	for _, p := range plan {
		if p.Kind == probes.KindStaleness && !kafkaReady {
			stopKafka, err := setUpKafka(ctx, f, &o.Kafka)
			defer stopKafka()
			if err != nil {
				failures = append(failures, fmt.Sprintf("%s: %v", p.Name, err))
				continue
			}
			kafkaReady = true
		}
		log.Printf("%s: %s", p.Name, probes.Title(p))
		res := probes.Run(ctx, p, pc, pools, o)
		report.Results = append(report.Results, res)
		if res.Error != "" {
			failures = append(failures, fmt.Sprintf("%s: %s", p.Name, res.Error))
		}
		for _, r := range res.Runs {
			if r.Error != "" {
				failures = append(failures, fmt.Sprintf("%s/%s: %s", p.Name, r.Label(), r.Error))
			}
			for _, g := range probes.Gate(p, r) {
				failures = append(failures, fmt.Sprintf("%s/%s: %s", p.Name, r.Label(), g))
			}
			log.Printf("%s/%s: %s", p.Name, r.Label(), r.Summary())
		}
		if ctx.Err() != nil {
			break
		}
	}
	if err := writeMemory(f.out, rawDir, report); err != nil {
		return failures, err
	}
	return failures, ctx.Err()
}

// writeMemory saves MEMORY.md and the raw samples as JSON.
func writeMemory(out, rawDir string, report *probes.Report) error {
	path := filepath.Join(out, "MEMORY.md")
	if err := writeMarkdown(path, report.WriteMarkdown); err != nil {
		return err
	}
	log.Printf("wrote %s", path)
	return writeJSON(filepath.Join(rawDir, "memory-run-"+report.Start.Format("20060102T150405Z")+".json"), report)
}
