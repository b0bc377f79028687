package loadtest

import (
	"context"
	"errors"
	"math"
	"time"
)

// backToBackTimeout bounds one scrape of the scrape-load probe: long enough for the stock
// exporter to render 100k series on a busy host, so that its slowness shows as latency, not as
// failures.
const backToBackTimeout = 2 * time.Minute

// runScrapeLoad runs, for each side in turn and in one process: a warm-up, a phase at the
// maximum ingest rate without scrapes, with p.ScrapeEvery a phase with one client scraping at that
// period (as Prometheus does), then a phase with p.Scrapers clients scraping back to back. The
// phases compare ingest rate and RSS with and without scrapers.
func runScrapeLoad(ctx context.Context, p Probe, pc ProbeCollectors, pools *Pools, o Options, res *ProbeResult) error {
	shape := p.Shapes[0]
	pool, err := pools.Get(shape, p.SpansPerRequest)
	if err != nil {
		return err
	}
	return eachSide(ctx, p, pc, pool, res, func(c Collector, run *ProbeRun) error {
		return scrapeLoadRun(ctx, p, c, pool, o, run)
	})
}

func scrapeLoadRun(ctx context.Context, p Probe, c Collector, pool *Pool, o Options, run *ProbeRun) error {
	s, err := startSolo(ctx, c, o, p.Name+"-"+c.Name, probeEnv(p), p.pinned())
	if err != nil {
		return err
	}
	l, err := startLoad(pool, s, o.Concurrency)
	if err != nil {
		return errors.Join(err, finishRun(s, run))
	}
	type spec struct {
		name     string
		scrapers int
		period   time.Duration
	}
	phases := []spec{{name: "no scrapes"}}
	if p.ScrapeEvery > 0 {
		phases = append(phases, spec{"scraped every " + p.ScrapeEvery.String(), 1, p.ScrapeEvery})
	}
	phases = append(phases, spec{name: "scraped back to back", scrapers: p.Scrapers})
	if wait(ctx, s, p.Warmup) {
		for _, ph := range phases {
			var sc *scrapers
			if ph.scrapers > 0 {
				sc = startScrapers(ctx, s.ep.metricsURL(), ph.scrapers, p.Gzip, ph.period, backToBackTimeout)
			}
			phase, ok := measurePhase(ctx, s, l, ph.name, p.Window, sc)
			run.Phases = append(run.Phases, phase)
			if !ok {
				break
			}
		}
	}
	l.end()
	return finishRun(s, run)
}

// measurePhase measures window of load l on s; sc, if not nil, are scrapers started for the
// phase and ended with it. It returns false when the window was cut short (collector killed,
// run interrupted).
func measurePhase(ctx context.Context, s *solo, l *load, name string, window time.Duration, sc *scrapers) (Phase, bool) {
	from, spans0 := time.Since(s.watch.start), l.gen.Acked()
	steal := startSteal(s.cpus)
	ok := wait(ctx, s, window)
	phase := Phase{Name: name, StealPercent: steal.percent()}
	if sc != nil {
		phase.Scrapes = sc.end()
	}
	to, spans1 := time.Since(s.watch.start), l.gen.Acked()
	samples := s.watch.Samples()
	phase.Seconds = (to - from).Seconds()
	phase.Spans = spans1 - spans0
	phase.SpansPerSec = float64(phase.Spans) / phase.Seconds
	phase.CPUPercent = cpuBetween(samples, from.Seconds(), to.Seconds())
	phase.RSSMaxMiB, phase.RSSEndMiB = rssBetween(samples, from.Seconds(), to.Seconds())
	return phase, ok
}

// finishRun stops s and fills the run's samples, RSS maximum and kill reading.
func finishRun(s *solo, run *ProbeRun) error {
	run.Placement = s.placement
	took, err := s.stop()
	run.StopSeconds = took.Seconds()
	run.Samples = s.watch.Samples()
	run.RSSMaxMiB, _ = rssBetween(run.Samples, 0, math.MaxFloat64)
	if k, ok := s.watch.KilledAt(); ok {
		run.Killed = &k
	}
	return err
}
