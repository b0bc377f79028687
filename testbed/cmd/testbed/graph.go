package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/graph"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

// selectGraph returns the service graph scenario if -run selects it.
func selectGraph(f flags) ([]solo.Probe, error) {
	if f.graphRounds < 1 {
		return nil, fmt.Errorf("-graph-rounds must be 1 or more, got %d", f.graphRounds)
	}
	plan := graph.Plan(graph.PlanConfig{FlushInterval: f.flushInterval, Phase: f.phase, Rounds: f.graphRounds})
	plan, err := selectByName(plan, f.run, func(p solo.Probe) string { return p.Name })
	if err != nil {
		return nil, err
	}
	if len(plan) == 0 {
		return nil, errors.New("no scenario to run")
	}
	return plan, nil
}

// runGraph runs the service graph scenario and writes <out>/GRAPH.md and the raw JSON. It fails
// when a run could not be measured or one of ours did not count every call and edge; the stock
// side's losses are reported, not failures.
func runGraph(ctx context.Context, f flags) ([]string, error) {
	plan, err := selectGraph(f)
	if err != nil {
		return nil, err
	}
	rawDir := filepath.Join(f.out, "raw")
	if err := os.MkdirAll(rawDir, 0o755); err != nil {
		return nil, err
	}
	gc := graph.Collectors{
		Red:   harness.Collector{Name: "red", Binary: f.oursBin, Config: f.oursConfig},
		Ours:  harness.Collector{Name: "ours", Binary: f.oursBin, Config: f.graphConfig},
		Stock: harness.Collector{Name: "stock", Binary: f.stockBin, Config: f.stockGraphConfig},
	}
	if err := checkCollectors(gc.Red, gc.Ours, gc.Stock); err != nil {
		return nil, err
	}
	o := f.options(rawDir)
	o.RSSCap = uint64(f.rssCapMiB) << 20
	log.Printf("building the call graph pool (%s)", graph.Shape100k)
	pool, err := graph.NewPool(graph.Shape100k, f.spansPerRequest, 1)
	if err != nil {
		return nil, err
	}
	var failures []string
	for _, p := range plan {
		report := &graph.Report{
			Start: time.Now().UTC(), Machine: harness.ReadMachine(), Commit: sourceCommit(), RSSCapMiB: float64(f.rssCapMiB),
			FlushInterval: f.flushInterval, Concurrency: f.concurrency,
		}
		log.Printf("%s: %s", p.Name, graph.Title(p))
		report.Result = graph.Measure(ctx, p, gc, pool, o)
		for _, r := range report.Result.Runs {
			log.Printf("%s/%s: %s; sent %d spans, %d edge requests; counted %d, %d", p.Name, r.Label(), r.Summary(),
				r.Spans, r.Edges, r.CallsCounted, r.EdgesCounted)
		}
		failures = append(failures, report.Failures()...)
		path := filepath.Join(f.out, "GRAPH.md")
		if err := writeMarkdown(path, report.WriteMarkdown); err != nil {
			return failures, err
		}
		log.Printf("wrote %s", path)
		if err := writeJSON(filepath.Join(rawDir, "graph-run-"+report.Start.Format("20060102T150405Z")+".json"), report); err != nil {
			return failures, err
		}
	}
	return failures, ctx.Err()
}

// sourceCommit names the checkout the testbed runs from ("abc1234", "-dirty" with uncommitted
// changes), or "" outside a git checkout.
func sourceCommit() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty", "--abbrev=7").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
