package compare

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// Options are the settings of a comparison run: those every mode shares, the two collectors of
// the OTLP and the Kafka scenarios, and the OTLP load window.
type Options struct {
	harness.Options
	Ours, Stock harness.Collector
	// OursKafka and StockKafka are the same binaries with their Kafka gateway configs.
	OursKafka, StockKafka harness.Collector
	// Duration is the load window of an OTLP scenario.
	Duration time.Duration
}

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

// Run runs sc on both collectors at once and returns what each did. An error means the run could
// not be measured (a collector did not start or crashed); lost spans are a result, not an error.
func Run(ctx context.Context, sc Scenario, pool *harness.Pool, o Options) (*Result, error) {
	ours, stock := o.Ours, o.Stock
	if sc.Transport == TransportKafka {
		ours, stock = o.OursKafka, o.StockKafka
	}
	res := &Result{Scenario: sc, Start: time.Now().UTC(), LoadAverage: harness.LoadAverage()}
	res.Ours = Side{Name: ours.Name, Binary: ours.Binary, Config: ours.Config}
	res.Stock = Side{Name: stock.Name, Binary: stock.Binary, Config: stock.Config}
	sides := []*side{{c: ours, out: &res.Ours}, {c: stock, out: &res.Stock}}

	scraper := harness.NewScraper(o.ScrapeInterval)
	defer scraper.Close()

	var err error
	switch sc.Transport {
	case TransportOTLP:
		err = runOTLP(ctx, sc, pool, o, sides, scraper, res)
	case TransportKafka:
		err = runKafka(ctx, sc, pool, o, sides, scraper, res)
	default:
		err = fmt.Errorf("unknown transport %q", sc.Transport)
	}
	for _, s := range sides {
		if s.proc == nil {
			continue
		}
		if stopErr := s.proc.Stop(); stopErr != nil {
			s.out.Error = harness.JoinErr(s.out.Error, stopErr.Error())
			err = errors.Join(err, stopErr)
		}
	}
	return res, err
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
