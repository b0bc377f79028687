package compare

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// side is one collector's live state during a run.
type side struct {
	c        harness.Collector
	ep       harness.Endpoints
	proc     *harness.Process
	gen      *harness.Generator
	progress atomic.Int64 // spans taken so far, as the sampler reads them
	out      *Side
	mu       sync.Mutex // guards out.Scrapes and out.Samples
}

// launchCollectors starts every side's process with its own endpoints.
func launchCollectors(sc Scenario, o Options, sides []*side, extraEnv map[string]func(*side) string) error {
	for _, s := range sides {
		ep, err := harness.NewEndpoints()
		if err != nil {
			return err
		}
		s.ep = ep
		env := ep.Env()
		if o.FlushInterval > 0 {
			env[harness.FlushEnv] = o.FlushInterval.String()
		}
		for k, v := range extraEnv {
			env[k] = v(s)
		}
		logPath := filepath.Join(o.RawDir, sc.Name+"-"+s.c.Name+".log")
		if s.proc, err = harness.StartCollector(s.c, env, logPath, nil); err != nil {
			return err
		}
	}
	return nil
}

// waitHealthy waits until every side's health check and metrics endpoint answer.
func waitHealthy(ctx context.Context, o Options, sides []*side, scraper *harness.Scraper) error {
	for _, s := range sides {
		if err := scraper.WaitReady(ctx, s.ep.HealthURL(), harness.ReadyTimeout); err != nil {
			return fmt.Errorf("%s did not become healthy (log in %s): %w", s.c.Name, o.RawDir, err)
		}
		if err := scraper.WaitReady(ctx, s.ep.MetricsURL(), harness.ReadyTimeout); err != nil {
			return fmt.Errorf("%s metrics endpoint did not answer: %w", s.c.Name, err)
		}
	}
	return nil
}
