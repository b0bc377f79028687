package loadtest

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

// Transport is how spans reach the collectors.
type Transport string

const (
	// TransportOTLP sends OTLP gRPC to each collector, the same requests at the same pace.
	TransportOTLP Transport = "otlp"
	// TransportKafka writes one backlog to a topic that each collector consumes in its own group.
	TransportKafka Transport = "kafka"
)

// Scenario is one load shape run on both collectors at once.
type Scenario struct {
	Name      string        `json:"name"`
	Transport Transport     `json:"transport"`
	Shape     harness.Shape `json:"shape"`
	// Rate is the target in spans/s per collector; 0 sends as fast as each collector acknowledges.
	Rate int `json:"rate"`
	// Backlog is the number of spans written to the topic before the collectors start (Kafka).
	Backlog int64 `json:"backlog,omitempty"`
}

// Title is the scenario as a table row names it.
func (s Scenario) Title() string {
	switch {
	case s.Transport == TransportKafka:
		return fmt.Sprintf("Kafka backlog of %s spans, %s", harness.HumanCount(float64(s.Backlog)), s.Shape)
	case s.Rate == 0:
		return fmt.Sprintf("OTLP max, %s", s.Shape)
	default:
		return fmt.Sprintf("OTLP %s spans/s, %s", harness.HumanCount(float64(s.Rate)), s.Shape)
	}
}

// Options are the settings of a run: those every mode shares, the comparison scenarios'
// collectors and window, and the memory probe's heap profile.
type Options struct {
	harness.Options
	Ours, Stock harness.Collector
	// OursKafka and StockKafka are the same binaries with their Kafka gateway configs.
	OursKafka, StockKafka harness.Collector
	// Duration is the load window of an OTLP scenario.
	Duration time.Duration
	// HeapProfile makes the memory probe take a heap profile of ours at the end of its load; our
	// config must then enable the pprof extension on ${env:PPROF_ENDPOINT}.
	HeapProfile bool
	// HeapProfileAtEnd moves that profile from the second flush to the last second of the load,
	// when every series exists and several flushes and renders have run: the state whose RSS
	// keeps growing after the second flush.
	HeapProfileAtEnd bool
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
