package main

import (
	"context"
	"fmt"
	"log"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/native"
)

// runNative runs the native histogram probe and writes <out>/NATIVE.md and the raw JSON. It fails
// when a side or a scrape format could not be measured; a collector killed over the RSS cap is a
// result.
func runNative(ctx context.Context, f flags) ([]string, error) {
	if f.nativeScrapes < 1 {
		return nil, fmt.Errorf("-native-scrapes must be 1 or more, got %d", f.nativeScrapes)
	}
	plan, err := selectByName(native.Plan(native.PlanConfig{
		FlushInterval: f.flushInterval, Phase: f.phase, Scrapes: f.nativeScrapes,
	}), f.run, func(p solo.Probe) string { return p.Name })
	if err != nil {
		return nil, err
	}
	pc := native.Collectors{
		Ours:        harness.Collector{Name: "ours", Binary: f.oursBin, Config: f.oursNativeConfig},
		OursClassic: harness.Collector{Name: "ours-classic", Binary: f.oursBin, Config: f.oursConfig},
		Stock:       harness.Collector{Name: "stock", Binary: f.stockBin, Config: f.stockNativeConfig},
	}
	o, rawDir, err := f.probeOptions(pc.Ours, pc.OursClassic, pc.Stock)
	if err != nil {
		return nil, err
	}
	report := &native.Report{
		Start: time.Now().UTC(), Commit: gitCommit(), Machine: harness.ReadMachine(), RSSCapMiB: float64(f.rssCapMiB),
		FlushInterval: f.flushInterval, Concurrency: f.concurrency,
		Configs: []string{
			"ours: " + f.oursNativeConfig, "ours-classic: " + f.oursConfig, "stock: " + f.stockNativeConfig,
		},
	}
	var failures []string
	run := func(p solo.Probe, pools *solo.Pools) *solo.ProbeResult {
		return native.Run(ctx, p, pc, pools, o)
	}
	report.Results, failures = runPlan(ctx, plan, native.Title, run, func(r solo.ProbeRun) []string {
		var lines []string
		if r.Native != nil {
			for _, sc := range r.Native.Scrapes {
				if sc.Error != "" {
					lines = append(lines, fmt.Sprintf("%s scrapes: %s", sc.Format, sc.Error))
				}
			}
		}
		return lines
	})
	path := filepath.Join(f.out, "NATIVE.md")
	if err := writeMarkdown(path, report.WriteMarkdown); err != nil {
		return failures, err
	}
	log.Printf("wrote %s", path)
	if err := writeJSON(filepath.Join(rawDir, "native-run-"+report.Start.Format("20060102T150405Z")+".json"), report); err != nil {
		return failures, err
	}
	return failures, ctx.Err()
}

// gitCommit names the checked-out commit (with "+changes" when the tree differs from it), or ""
// outside a git tree: the report says which code the binaries were built from, if they were built
// from this tree.
func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	commit := strings.TrimSpace(string(out))
	if err := exec.Command("git", "diff", "--quiet", "HEAD").Run(); err != nil {
		commit += "+changes"
	}
	return commit
}
