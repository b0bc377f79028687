package loadtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/otelcol-red/otelcol-red/internal/freeport"
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
	Name      string    `json:"name"`
	Transport Transport `json:"transport"`
	Shape     Shape     `json:"shape"`
	// Rate is the target in spans/s per collector; 0 sends as fast as each collector acknowledges.
	Rate int `json:"rate"`
	// Backlog is the number of spans written to the topic before the collectors start (Kafka).
	Backlog int64 `json:"backlog,omitempty"`
}

// Title is the scenario as a table row names it.
func (s Scenario) Title() string {
	switch {
	case s.Transport == TransportKafka:
		return fmt.Sprintf("Kafka backlog of %s spans, %s", humanCount(float64(s.Backlog)), s.Shape)
	case s.Rate == 0:
		return fmt.Sprintf("OTLP max, %s", s.Shape)
	default:
		return fmt.Sprintf("OTLP %s spans/s, %s", humanCount(float64(s.Rate)), s.Shape)
	}
}

// Options are the settings shared by every scenario of a run.
type Options struct {
	Ours, Stock Collector
	// OursKafka and StockKafka are the same binaries with their Kafka gateway configs.
	OursKafka, StockKafka Collector

	// Duration is the load window of an OTLP scenario.
	Duration time.Duration
	// ScrapeInterval spaces the Prometheus-style scrapes taken during the load; a scrape times out
	// after one interval, the longest timeout Prometheus allows.
	ScrapeInterval time.Duration
	// SampleInterval spaces the CPU, RSS and throughput readings.
	SampleInterval time.Duration
	// FlushInterval is handed to both collectors as METRICS_FLUSH_INTERVAL: how often the
	// trace-to-metrics connector emits its series.
	FlushInterval time.Duration
	// DrainTimeout bounds the wait, after the load, for the calls counters to reach the spans sent.
	// The first check comes one flush interval after the load; a scrape of 100k series may take
	// tens of seconds on a busy machine, so this is generous.
	DrainTimeout time.Duration
	// KafkaTimeout bounds the time a collector may take to consume the backlog.
	KafkaTimeout time.Duration
	// Concurrency is the number of requests in flight per collector.
	Concurrency int
	// CallsMetric is the counter whose sum must equal the spans sent.
	CallsMetric string
	// RawDir receives collector logs.
	RawDir string
	// RSSCap is the resident set size at which a probe kills a collector (0: no cap).
	RSSCap uint64
	// HeapProfile makes the memory probe take a heap profile of ours at the end of its load; our
	// config must then enable the pprof extension on ${env:PPROF_ENDPOINT}.
	HeapProfile bool
	// HeapProfileAtEnd moves that profile from the second flush to the last second of the load,
	// when every series exists and several flushes and renders have run: the state whose RSS
	// keeps growing after the second flush.
	HeapProfileAtEnd bool
	// CPUProfile makes the floor and scaling probes take a CPU profile this long (whole seconds,
	// at most the measured phase) of every collector, from the start of its measured phase, and
	// the million-series probe one from the first flush (its load lasts until the profile ends);
	// the pprof extension is added to each config by an overlay (cpuprofile.go). 0: none.
	CPUProfile time.Duration

	// Kafka wiring, used by Kafka scenarios only.
	KafkaBrokers    string
	KafkaPartitions int
	// CreateTopic makes a topic with the given partitions.
	CreateTopic func(ctx context.Context, topic string, partitions int) error
	// NewKafkaSink returns a sink that writes pool requests to topic as OTLP-proto messages.
	NewKafkaSink func(pool *Pool, brokers, topic string) (Sink, error)
}

// readyTimeout bounds collector start-up.
const readyTimeout = time.Minute

// side is one collector's live state during a run.
type side struct {
	c        Collector
	ep       endpoints
	proc     *Process
	gen      *Generator
	progress atomic.Int64 // spans taken so far, as the sampler reads them
	out      *Side
	mu       sync.Mutex // guards out.Scrapes and out.Samples
}

type endpoints struct {
	otlpGRPC, otlpHTTP, metrics, health string
	telemetryPort                       int
}

func (e endpoints) env() map[string]string {
	return map[string]string{
		"OTLP_GRPC_ENDPOINT": e.otlpGRPC,
		"OTLP_HTTP_ENDPOINT": e.otlpHTTP,
		"METRICS_ENDPOINT":   e.metrics,
		"HEALTH_ENDPOINT":    e.health,
		"TELEMETRY_PORT":     strconv.Itoa(e.telemetryPort),
	}
}

// flushEnv is the environment both configs read their connector's flush interval from.
const flushEnv = "METRICS_FLUSH_INTERVAL"

func (e endpoints) metricsURL() string { return "http://" + e.metrics + "/metrics" }
func (e endpoints) healthURL() string  { return "http://" + e.health + "/" }
func (e endpoints) telemetryURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", e.telemetryPort)
}

func newEndpoints() (endpoints, error) {
	ports, err := freePorts(5)
	if err != nil {
		return endpoints{}, err
	}
	addr := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	return endpoints{
		otlpGRPC: addr(ports[0]), otlpHTTP: addr(ports[1]), metrics: addr(ports[2]), health: addr(ports[3]),
		telemetryPort: ports[4],
	}, nil
}

// freePorts returns n distinct free ports from below the ephemeral range, where the load
// generator's and the collectors' own client sockets cannot take them before a collector binds.
func freePorts(n int) ([]int, error) {
	addrs, err := freeport.Addrs(n)
	if err != nil {
		return nil, err
	}
	ports := make([]int, n)
	for i, a := range addrs {
		_, p, _ := net.SplitHostPort(a)
		if ports[i], err = strconv.Atoi(p); err != nil {
			return nil, err
		}
	}
	return ports, nil
}

// Run runs sc on both collectors at once and returns what each did. An error means the run could
// not be measured (a collector did not start or crashed); lost spans are a result, not an error.
func Run(ctx context.Context, sc Scenario, pool *Pool, o Options) (*Result, error) {
	ours, stock := o.Ours, o.Stock
	if sc.Transport == TransportKafka {
		ours, stock = o.OursKafka, o.StockKafka
	}
	res := &Result{Scenario: sc, Start: time.Now().UTC(), LoadAverage: LoadAverage()}
	res.Ours = Side{Name: ours.Name, Binary: ours.Binary, Config: ours.Config}
	res.Stock = Side{Name: stock.Name, Binary: stock.Binary, Config: stock.Config}
	sides := []*side{{c: ours, out: &res.Ours}, {c: stock, out: &res.Stock}}

	scraper := NewScraper(o.ScrapeInterval)
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
			s.out.Error = joinErr(s.out.Error, stopErr.Error())
			err = errors.Join(err, stopErr)
		}
	}
	return res, err
}

// launchCollectors starts every side's process with its own endpoints.
func launchCollectors(sc Scenario, o Options, sides []*side, extraEnv map[string]func(*side) string) error {
	for _, s := range sides {
		ep, err := newEndpoints()
		if err != nil {
			return err
		}
		s.ep = ep
		env := ep.env()
		if o.FlushInterval > 0 {
			env[flushEnv] = o.FlushInterval.String()
		}
		for k, v := range extraEnv {
			env[k] = v(s)
		}
		logPath := filepath.Join(o.RawDir, sc.Name+"-"+s.c.Name+".log")
		if s.proc, err = StartCollector(s.c, env, logPath); err != nil {
			return err
		}
	}
	return nil
}

// waitHealthy waits until every side's health check and metrics endpoint answer.
func waitHealthy(ctx context.Context, o Options, sides []*side, scraper *Scraper) error {
	for _, s := range sides {
		if err := scraper.WaitReady(ctx, s.ep.healthURL(), readyTimeout); err != nil {
			return fmt.Errorf("%s did not become healthy (log in %s): %w", s.c.Name, o.RawDir, err)
		}
		if err := scraper.WaitReady(ctx, s.ep.metricsURL(), readyTimeout); err != nil {
			return fmt.Errorf("%s metrics endpoint did not answer: %w", s.c.Name, err)
		}
	}
	return nil
}

func joinErr(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// humanCount writes 10000 as "10k" and 2000000 as "2M".
func humanCount(v float64) string {
	switch {
	case v >= 1e6 && int64(v)%1e5 == 0:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e3 && int64(v)%100 == 0:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	default:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
}
