package solo

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// CPU profiles of the collectors of the floor and scaling probes (-cpu-profile). Where a width
// costs ours more CPU per span than the floor, the profiles of both, taken in the same measured
// phase, say which functions the difference is in. The pprof extension is added to whatever
// config a side runs (the floor's, ours, the stock twin's) by an overlay merged over it, so the
// configs measured stay the ones shipped, and a profiled run differs from an unprofiled one by an
// idle listener and the profiling itself (SIGPROF at Go's 100 Hz; its cost on the figures is not
// measured, so profiled runs are compared with profiled runs).

// profileSeconds is how long a CPU profile of a phase of window lasts: o.CPUProfile in whole
// seconds (the extension takes seconds), no longer than the window and at least 1.
func profileSeconds(o harness.Options, window time.Duration) int {
	return max(int(min(o.CPUProfile, window)/time.Second), 1)
}

// StartCPUProfile starts a CPU profile of s for the phase of window that begins now, and returns
// the function that waits for it and records it in run (an error goes to run.Error: a profile
// that could not be taken does not void the phase's figures; one cut short by the RSS cap
// killing the collector is not an error, the kill is the run's result). Without o.CPUProfile it
// does nothing.
func StartCPUProfile(ctx context.Context, s *Instance, o harness.Options, label string, window time.Duration, run *ProbeRun) (wait func()) {
	if o.CPUProfile <= 0 {
		return func() {}
	}
	type result struct {
		path, top string
		err       error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.path, r.top, r.err = takeCPUProfile(ctx, s, o, label, profileSeconds(o, window))
		done <- r
	}()
	return func() {
		r := <-done
		run.CPUProfile, run.CPUTop = r.path, r.top
		if _, killed := s.watch.KilledAt(); r.err != nil && !killed {
			run.Error = harness.JoinErr(run.Error, r.err.Error())
		}
	}
}

// takeCPUProfile saves a CPU profile of secs seconds from the collector's pprof extension as
// <label>-cpu.pb.gz in o.RawDir, and summarises it with `go tool pprof -top` where Go is.
func takeCPUProfile(ctx context.Context, s *Instance, o harness.Options, label string, secs int) (path, top string, err error) {
	body, err := GetPprof(ctx, s, fmt.Sprintf("profile?seconds=%d", secs), time.Duration(secs)*time.Second+time.Minute)
	if err != nil {
		return "", "", fmt.Errorf("cannot take CPU profile: %w", err)
	}
	path = filepath.Join(o.RawDir, label+"-cpu.pb.gz")
	if err := os.WriteFile(path, body, 0o644); err != nil {
		return "", "", err
	}
	if _, err := exec.LookPath("go"); err != nil {
		return path, "no Go toolchain on this host: summarise " + path + " with go tool pprof -top", nil
	}
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=25", path).Output()
	if err != nil {
		return path, "", fmt.Errorf("go tool pprof on %s: %w", path, harness.ExitDetail(err))
	}
	return path, string(out), nil
}

// GetPprof reads /debug/pprof/<query> from the collector's pprof extension.
func GetPprof(ctx context.Context, s *Instance, query string, timeout time.Duration) ([]byte, error) {
	url := s.PprofURL(query)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("does %s enable the pprof extension on $%s? %w", s.c.Config, pprofEnv, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("cannot read url=%q: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("url=%q: status %s", url, resp.Status)
	}
	return body, nil
}

// WriteCPUProfiles lists the CPU profiles of runs, each with its summary, under one heading; it
// writes nothing when no run has one. names[i] labels runs[i].
func WriteCPUProfiles(b *bufio.Writer, runs []ProbeRun, names []string) {
	if !slices.ContainsFunc(runs, func(r ProbeRun) bool { return r.CPUProfile != "" }) {
		return
	}
	b.WriteString("\n### CPU profiles\n\nEach taken from the start of the run's measured phase (`-cpu-profile`).\n")
	for i, run := range runs {
		if run.CPUProfile == "" {
			continue
		}
		lines := strings.Split(strings.TrimRight(run.CPUTop, "\n"), "\n")
		fmt.Fprintf(b, "\n%s (`%s`):\n\n```\n%s\n```\n", names[i], run.CPUProfile, strings.Join(lines[:min(len(lines), 32)], "\n"))
	}
}
