package probes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

// memoryFlushes is how many flushes the memory probe waits for (within its MaxWindow): the RSS
// after the second is the target figure, the third shows whether it keeps growing.
const memoryFlushes = 3

// runMemory loads each side in turn with the same pool as fast as it acknowledges, for the
// window, and records the RSS after every flush, gzip scrape latency and the ingest rate.
func runMemory(ctx context.Context, p solo.Probe, cs solo.Collectors, pools *solo.Pools, o Options, res *solo.ProbeResult) error {
	return solo.EachSideOnPool(ctx, p, cs, pools, res, func(c harness.Collector, pool *harness.Pool, run *solo.ProbeRun) error {
		return memoryRun(ctx, p, c, pool, o, run)
	})
}

func memoryRun(ctx context.Context, p solo.Probe, c harness.Collector, pool *harness.Pool, o Options, run *solo.ProbeRun) error {
	s, err := solo.Start(ctx, c, o.Options, p.Name+"-"+c.Name, p.Env(), p.Pinned())
	if err != nil {
		return err
	}
	fw := solo.WatchFlushes(ctx, s, flushPollInterval)
	l, err := solo.StartLoad(pool, s, o.Concurrency)
	if err != nil {
		fw.Close()
		return errors.Join(err, s.Finish(run))
	}
	loadStart, steal := s.Elapsed(), s.StartSteal()
	// Scrapes as Prometheus takes them: gzip, every interval, timing out after one interval. They
	// start with the first flush: before it there is no page to time (ours holds a scrape until
	// its first render, once per process), and a side that delivers no flush within two
	// intervals is scraped from then on, so its failures still show.
	var sc *solo.Scrapers
	startScraping := func() {
		sc = solo.StartScrapers(ctx, s.MetricsURL(), 1, true, o.ScrapeInterval, o.ScrapeInterval)
	}
	profile := o.HeapProfile && c.Name == "ours"
	// cachedprom's renders are timed from the second flush on, when every series exists.
	var renders, rendersAtSecond, rendersAtFirst renderTotals
	var firstFlushSeen time.Time
	timeRenders := c.Name == "ours"
	// With o.CPUProfile, a CPU profile from the first flush on: the first render of the burst,
	// the flushes and renders after it, beside ingest.
	profiledCPU := func() {}
	cpuProfile := o.CPUProfile > 0
	// The load lasts the window, and longer (up to MaxWindow) until memoryFlushes flushes were
	// delivered: a collector whose flushes fall behind still gets measured after its second one.
	for start := time.Now(); ; {
		if !s.Wait(ctx, time.Second) {
			break
		}
		seen := len(solo.Flushes(fw.Snapshot(), o.FlushInterval))
		if timeRenders && seen >= 1 && run.FirstRenderSeconds == 0 {
			// The first render that ends after the first flush: its own time, and how long
			// the burst waited for it.
			now := readRenders(ctx, s)
			switch {
			case firstFlushSeen.IsZero():
				firstFlushSeen, rendersAtFirst = time.Now(), now
			case now.count > rendersAtFirst.count:
				run.FirstRenderSeconds = (now.sum - rendersAtFirst.sum) / (now.count - rendersAtFirst.count)
				run.FirstRenderAfter = time.Since(firstFlushSeen).Seconds()
			}
		}
		if timeRenders && seen >= 2 && rendersAtSecond.count == 0 {
			rendersAtSecond = readRenders(ctx, s)
		}
		if sc == nil && (seen >= 1 || time.Since(start) >= 2*o.FlushInterval) {
			startScraping()
		}
		if cpuProfile && seen >= 1 {
			profiledCPU = solo.StartCPUProfile(ctx, s, o.Options, p.Name+"-"+c.Name, o.CPUProfile, run)
			cpuProfile = false
		}
		if profile && profileDue(seen, s, o) {
			heapProfile(ctx, s, o, p.Name+"-"+c.Name, run)
			profile = false
		}
		elapsed := time.Since(start)
		if elapsed >= p.MaxWindow || elapsed >= p.Window && seen >= memoryFlushes {
			break
		}
	}
	if _, killed := s.KilledAt(); profile && o.HeapProfileAtEnd && !killed {
		// Still under load: the end state, not the idle collector after it.
		heapProfile(ctx, s, o, p.Name+"-"+c.Name, run)
		profile = false
	}
	if _, killed := s.KilledAt(); profile && !killed {
		// Fewer than two flushes in MaxWindow: profile what there is.
		heapProfile(ctx, s, o, p.Name+"-"+c.Name, run)
	}
	profiledCPU()
	if timeRenders && rendersAtSecond.count > 0 {
		renders = readRenders(ctx, s)
		if n := renders.count - rendersAtSecond.count; n > 0 {
			run.Renders, run.RenderSeconds = int(n), (renders.sum-rendersAtSecond.sum)/n
		}
	}
	spans := l.End()
	loadEnd, stolen := s.Elapsed(), steal.Percent()
	scrapes := solo.ScrapeStats{Clients: 1, Gzip: true}
	if sc != nil {
		scrapes = sc.End()
	}
	if _, killed := s.KilledAt(); c.Name == "ours" && !killed {
		// Ours is checked for exactness too: bytes per series only count with every span
		// counted. The stock side is not: at a million series its page takes minutes.
		counted, err := countCalls(ctx, s, o.Options, spans, countWait(o.FlushInterval, run))
		if counted == 0 && err != nil {
			counted = -1
			run.Error = harness.JoinErr(run.Error, err.Error())
		}
		run.Sent, run.Counted = spans, counted
	}
	deliveries := fw.Close()
	stopErr := s.Finish(run)
	samples := run.Samples
	window := loadEnd - loadStart
	rssMax, rssEnd := solo.RSSBetween(samples, loadStart.Seconds(), loadEnd.Seconds())
	run.Phases = []solo.Phase{{
		Name: "load", Seconds: window.Seconds(), Spans: spans, SpansPerSec: float64(spans) / window.Seconds(),
		CPUPercent: solo.CPUBetween(samples, loadStart.Seconds(), loadEnd.Seconds()),
		RSSMaxMiB:  rssMax, RSSEndMiB: rssEnd, Scrapes: scrapes, StealPercent: stolen,
	}}
	run.Flushes = flushRSS(solo.Flushes(deliveries, o.FlushInterval), samples, loadEnd.Seconds())
	return stopErr
}

// countWait is how long the probe waits for ours' calls counters to add up to the spans sent
// once the load ended: the flush of the last interval (up to two intervals with its delivery),
// then up to three renders, whose time is the longest seen in this run: one under way when that
// flush lands, the wait for the spare a scrape may still be reading (as long again), and the
// render of the final state. At GOMAXPROCS=1 on a slow host a render of a million series took
// 13-25 s, and with a fixed 30 s for all three one such run ended its wait without a complete
// reading.
func countWait(interval time.Duration, run *solo.ProbeRun) time.Duration {
	render := time.Duration(max(run.RenderSeconds, run.FirstRenderSeconds) * float64(time.Second))
	return 2*interval + max(30*time.Second, 3*render)
}

// renderDurationMetric is cachedprom's own render time, a histogram in seconds.
const renderDurationMetric = "otelcol_exporter_cachedprom_render_duration_seconds"

// renderTotals is the sum and count of cachedprom's render time histogram.
type renderTotals struct{ sum, count float64 }

// readRenders reads the render time histogram's sum and count from the collector's own
// telemetry; zero when it cannot.
func readRenders(ctx context.Context, s *solo.Instance) renderTotals {
	scraper := harness.NewCountingScraper(5 * time.Second)
	defer scraper.Close()
	v, err := scraper.SumCounters(ctx, s.TelemetryURL(), renderDurationMetric+"_sum", renderDurationMetric+"_count")
	if err != nil {
		return renderTotals{}
	}
	return renderTotals{sum: v[0], count: v[1]}
}

// flushRSS pairs each flush with the first RSS reading after it and the largest one until the
// next flush or end (seconds since the collector started).
func flushRSS(fl []solo.Delivery, samples []harness.Sample, end float64) []solo.FlushRSS {
	out := make([]solo.FlushRSS, 0, len(fl))
	for i, f := range fl {
		next := end
		if i+1 < len(fl) {
			next = fl[i+1].At
		}
		r := solo.FlushRSS{At: f.At, Points: f.Points}
		for _, s := range samples {
			if s.At >= f.At {
				r.RSSMiB = s.RSSMiB
				break
			}
		}
		r.RSSMaxMiB, _ = solo.RSSBetween(samples, f.At, max(next, f.At+1))
		out = append(out, r)
	}
	return out
}

// profileDue tells when to take the heap profile: once the second flush was delivered (the state
// the memory target is set for; with HeapProfileAtEnd, at the end of the load instead), or earlier when the RSS nears the cap, so that a collector about
// to be killed still leaves a profile.
func profileDue(flushesSeen int, s *solo.Instance, o Options) bool {
	if flushesSeen >= 2 && !o.HeapProfileAtEnd {
		return true
	}
	samples := s.Samples()
	return o.RSSCap > 0 && len(samples) > 0 && samples[len(samples)-1].RSSMiB*(1<<20) > 0.85*float64(o.RSSCap)
}

// heapProfile takes the heap profile and notes a failure in the run.
func heapProfile(ctx context.Context, s *solo.Instance, o Options, label string, run *solo.ProbeRun) {
	if err := takeHeapProfile(ctx, s, o, label, run); err != nil {
		run.Error = harness.JoinErr(run.Error, err.Error())
	}
}

// takeHeapProfile saves the collector's in-use heap (after a GC, so that it counts live objects
// only) from the pprof extension and summarises it with `go tool pprof -top -inuse_space`. The
// collector's config must enable the pprof extension on ${env:PPROF_ENDPOINT}.
func takeHeapProfile(ctx context.Context, s *solo.Instance, o Options, label string, run *solo.ProbeRun) error {
	body, err := solo.GetPprof(ctx, s, "heap?gc=1", 2*time.Minute)
	if err != nil {
		return fmt.Errorf("cannot take heap profile: %w", err)
	}
	path := filepath.Join(o.RawDir, label+"-heap.pb.gz")
	if err := os.WriteFile(path, body, 0o644); err != nil {
		return err
	}
	run.HeapProfile = path
	stats, err := runtimeMemStats(ctx, s)
	if err != nil {
		return err
	}
	run.MemStats = stats
	if _, err := exec.LookPath("go"); err != nil {
		// A measuring host without Go (the binaries carried there as they are) keeps the profile
		// for `go tool pprof` where Go is.
		run.HeapTop = "no Go toolchain on this host: summarise " + path + " with go tool pprof -top -inuse_space"
		return nil
	}
	top, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-inuse_space", path).Output()
	if err != nil {
		return fmt.Errorf("go tool pprof on %s: %w", path, harness.ExitDetail(err))
	}
	lines := strings.Split(string(top), "\n")
	run.HeapTop = strings.Join(lines[:min(len(lines), 30)], "\n")
	run.HeapInuseBytes = pprofTotal(top)
	return nil
}

// memStatsKeys are the runtime.MemStats fields that split the RSS: live heap (HeapAlloc) and its
// GC headroom (NextGC), heap spans held but idle or given back (HeapIdle, HeapReleased),
// goroutine stacks and runtime overhead; what RSS holds beyond Sys - HeapReleased is off-heap
// memory the runtime does not see (mmap'd chunks).
var memStatsKeys = []string{"Sys", "HeapAlloc", "HeapSys", "HeapIdle", "HeapInuse", "HeapReleased",
	"StackInuse", "MSpanInuse", "GCSys", "OtherSys", "NextGC", "NumGC", "GCCPUFraction"}

// runtimeMemStats reads the runtime.MemStats block that the pprof heap endpoint appends to its
// text form (debug=1), right after the profile above.
func runtimeMemStats(ctx context.Context, s *solo.Instance) (map[string]float64, error) {
	url := s.PprofURL("heap?debug=1")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot read runtime.MemStats from url=%q: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("cannot read runtime.MemStats from url=%q: status %s", url, resp.Status)
	}
	return parseMemStats(resp.Body)
}

// parseMemStats picks memStatsKeys out of lines like "# HeapAlloc = 1234".
func parseMemStats(r io.Reader) (map[string]float64, error) {
	want := make(map[string]bool, len(memStatsKeys))
	for _, k := range memStatsKeys {
		want[k] = true
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "# ")
		if !ok {
			continue
		}
		k, v, ok := strings.Cut(line, " = ")
		if !ok || !want[k] {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return nil, fmt.Errorf("cannot parse runtime.MemStats %s=%q: %w", k, v, err)
		}
		out[k] = f
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if _, ok := out["HeapAlloc"]; !ok {
		return nil, errors.New("no runtime.MemStats block in the heap profile text")
	}
	return out, nil
}

// pprofTotalRE finds the total of `go tool pprof -top`: "Showing nodes accounting for 1.20GB,
// 99.1% of 1.21GB total".
var pprofTotalRE = regexp.MustCompile(`of ([0-9.]+)([kMG]?B) total`)

// pprofTotal returns the total in bytes from pprof -top output, or 0 if there is none.
func pprofTotal(top []byte) int64 {
	m := pprofTotalRE.FindSubmatch(top)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return 0
	}
	unit := map[string]float64{"B": 1, "kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}[string(m[2])]
	return int64(v * unit)
}
