package probes

import (
	"context"
	"errors"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

// backToBackTimeout bounds one scrape of the scrape-load probe: long enough for the stock
// exporter to render 100k series on a busy host, so that its slowness shows as latency, not as
// failures.
const backToBackTimeout = 2 * time.Minute

// runScrapeLoad runs, for each side in turn and in one process: a warm-up, a phase at the
// maximum ingest rate without scrapes, with p.ScrapeEvery a phase with one client scraping at that
// period (as Prometheus does), then a phase with p.Scrapers clients scraping back to back. The
// phases compare ingest rate and RSS with and without scrapers.
func runScrapeLoad(ctx context.Context, p solo.Probe, cs solo.Collectors, pools *solo.Pools, o harness.Options, res *solo.ProbeResult) error {
	shape := p.Shapes[0]
	pool, err := pools.Get(shape, p.SpansPerRequest)
	if err != nil {
		return err
	}
	return solo.EachSide(ctx, p, cs, pool, res, func(c harness.Collector, run *solo.ProbeRun) error {
		return scrapeLoadRun(ctx, p, c, pool, o, run)
	})
}

func scrapeLoadRun(ctx context.Context, p solo.Probe, c harness.Collector, pool *harness.Pool, o harness.Options, run *solo.ProbeRun) error {
	s, err := solo.Start(ctx, c, o, p.Name+"-"+c.Name, p.Env(), p.Pinned())
	if err != nil {
		return err
	}
	l, err := solo.StartLoad(pool, s, o.Concurrency)
	if err != nil {
		return errors.Join(err, s.Finish(run))
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
	if s.Wait(ctx, p.Warmup) {
		for _, ph := range phases {
			var sc *solo.Scrapers
			if ph.scrapers > 0 {
				sc = solo.StartScrapers(ctx, s.MetricsURL(), ph.scrapers, p.Gzip, ph.period, backToBackTimeout)
			}
			phase, ok := solo.MeasurePhase(ctx, s, l, ph.name, p.Window, sc)
			run.Phases = append(run.Phases, phase)
			if !ok {
				break
			}
		}
	}
	l.End()
	return s.Finish(run)
}
