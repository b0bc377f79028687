package loadtest

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
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

	// Kafka wiring, used by Kafka scenarios only.
	KafkaBrokers    string
	KafkaPartitions int
	// CreateTopic makes a topic with the given partitions.
	CreateTopic func(ctx context.Context, topic string, partitions int) error
	// NewKafkaSink returns a sink that writes pool requests to topic as OTLP-proto messages.
	NewKafkaSink func(pool *Pool, brokers, topic string) (Sink, error)
}

// acceptedSpansMetric is the collector's own count of spans its receivers accepted; a Kafka
// scenario follows consumption with it because it moves in real time, unlike the calls counters
// that only move at each metrics flush.
const acceptedSpansMetric = "otelcol_receiver_accepted_spans_total"

// kafkaPollInterval spaces the reads of the accepted-spans counters; it bounds the error of the
// consumption time a Kafka scenario measures.
const kafkaPollInterval = 100 * time.Millisecond

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

// freePorts asks the kernel for n distinct free ports; the listeners stay open until all are
// picked so that the same port is not handed out twice.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("cannot find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
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

func runOTLP(ctx context.Context, sc Scenario, pool *Pool, o Options, sides []*side, scraper *Scraper, res *Result) error {
	if err := launchCollectors(sc, o, sides, nil); err != nil {
		return err
	}
	if err := waitHealthy(ctx, o, sides, scraper); err != nil {
		return err
	}
	for _, s := range sides {
		sink, err := NewOTLPSink(pool, s.ep.otlpGRPC)
		if err != nil {
			return err
		}
		defer sink.Close()
		s.gen = NewGenerator(pool, sink, sc.Rate, o.Concurrency)
	}

	start := time.Now()
	cpu0 := cpuTimes(sides)
	monitorDone := startMonitors(ctx, o, sides, scraper, start, func(s *side) int64 { return s.gen.Acked() })

	stop := make(chan struct{})
	var gens sync.WaitGroup
	for _, s := range sides {
		gens.Add(1)
		go func() {
			defer gens.Done()
			s.gen.Run(stop)
		}()
	}
	select {
	case <-time.After(o.Duration):
	case <-ctx.Done():
	}
	close(stop)
	gens.Wait()
	window := time.Since(start)
	cpu1 := cpuTimes(sides)
	monitorDone()
	res.Window = window

	for i, s := range sides {
		s.out.Sent = s.gen.Acked()
		s.out.Retries = s.gen.Failures()
		s.out.Missed = s.gen.Missed()
		s.out.SpansPerSec = float64(s.out.Sent) / window.Seconds()
		summarise(s, cpu1[i]-cpu0[i], window)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return drain(ctx, o, sides)
}

func runKafka(ctx context.Context, sc Scenario, pool *Pool, o Options, sides []*side, scraper *Scraper, res *Result) error {
	if o.NewKafkaSink == nil || o.CreateTopic == nil {
		return errors.New("kafka scenario needs a Kafka sink and a topic creator")
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	topic := "testbed-" + sc.Name + "-" + run
	if err := o.CreateTopic(ctx, topic, o.KafkaPartitions); err != nil {
		return fmt.Errorf("cannot create topic %q: %w", topic, err)
	}
	sink, err := o.NewKafkaSink(pool, o.KafkaBrokers, topic)
	if err != nil {
		return err
	}
	written, err := writeBacklog(ctx, pool, sink, sc.Backlog, o.Concurrency)
	if closeErr := sink.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("cannot write the backlog to topic %q: %w", topic, err)
	}
	log.Printf("%s: wrote %d spans to topic %s", sc.Name, written, topic)
	for _, s := range sides {
		s.out.Sent = written
	}

	start := time.Now()
	err = launchCollectors(sc, o, sides, map[string]func(*side) string{
		"KAFKA_BROKERS": func(*side) string { return o.KafkaBrokers },
		"KAFKA_TOPIC":   func(*side) string { return topic },
		// A group per collector: each reads the whole backlog, as if it were the only gateway.
		"KAFKA_GROUP": func(s *side) string { return "testbed-" + s.c.Name + "-" + run },
	})
	if err != nil {
		return err
	}
	cpu0 := cpuTimes(sides)
	monitorDone := startMonitors(ctx, o, sides, scraper, start, func(s *side) int64 { return s.progress.Load() })

	// Follow consumption through each collector's own accepted-spans counter from the moment the
	// process runs: the receiver consumes before the health check turns ready.
	type span struct{ first, done time.Time }
	spans := make([]span, len(sides))
	cpuDone := make([]float64, len(sides))
	deadline := time.Now().Add(o.KafkaTimeout)
	var pollErr error
	for remaining := len(sides); remaining > 0 && pollErr == nil; {
		if time.Now().After(deadline) {
			pollErr = fmt.Errorf("backlog not consumed within %s", o.KafkaTimeout)
			break
		}
		select {
		case <-ctx.Done():
			pollErr = ctx.Err()
		case <-time.After(kafkaPollInterval):
		}
		for i, s := range sides {
			if !spans[i].done.IsZero() {
				continue
			}
			if exited, exitErr := s.proc.Exited(); exited {
				pollErr = fmt.Errorf("%s exited while consuming: %w", s.c.Name, errOrExit(exitErr))
				break
			}
			n, err := scraper.SumCounter(ctx, s.ep.telemetryURL(), acceptedSpansMetric)
			if err != nil {
				continue // not listening yet
			}
			s.progress.Store(int64(n))
			now := time.Now()
			if n > 0 && spans[i].first.IsZero() {
				spans[i].first = now
			}
			if int64(n) >= written {
				spans[i].done = now
				if c, _, err := s.proc.Usage(); err == nil {
					cpuDone[i] = c
				}
				remaining--
			}
		}
	}
	if pollErr == nil {
		pollErr = waitHealthy(ctx, o, sides, scraper)
	}
	monitorDone()
	for i, s := range sides {
		if spans[i].done.IsZero() {
			s.out.Error = joinErr(s.out.Error, "did not consume the whole backlog")
			continue
		}
		busy := spans[i].done.Sub(spans[i].first)
		s.out.SpansPerSec = float64(written) / max(busy, kafkaPollInterval).Seconds()
		summarise(s, cpuDone[i]-cpu0[i], spans[i].done.Sub(start))
		res.Window = max(res.Window, busy)
	}
	if pollErr != nil {
		return pollErr
	}
	return drain(ctx, o, sides)
}

// writeBacklog writes whole pool passes until at least n spans are in the topic.
func writeBacklog(ctx context.Context, pool *Pool, sink Sink, n int64, concurrency int) (int64, error) {
	requests := (n + int64(pool.SpansPerRequest) - 1) / int64(pool.SpansPerRequest)
	var (
		next    atomic.Int64
		written atomic.Int64
		wg      sync.WaitGroup
		mu      sync.Mutex
		first   error
	)
	for range max(concurrency, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r := next.Add(1) - 1
				if r >= requests || ctx.Err() != nil {
					return
				}
				if err := sink.Send(ctx, int(r%int64(len(pool.Encoded)))); err != nil {
					mu.Lock()
					first = errors.Join(first, err)
					mu.Unlock()
					return
				}
				written.Add(int64(pool.SpansPerRequest))
			}
		}()
	}
	wg.Wait()
	return written.Load(), first
}

// cpuTimes reads each side's CPU seconds so far.
func cpuTimes(sides []*side) []float64 {
	out := make([]float64, len(sides))
	for i, s := range sides {
		if c, _, err := s.proc.Usage(); err == nil {
			out[i] = c
		}
	}
	return out
}

// summarise fills the CPU and scrape figures of a side from its window.
func summarise(s *side, cpuSeconds float64, window time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.CPUPercent = cpuSeconds / window.Seconds() * 100
	if s.out.Sent > 0 {
		s.out.CPUSecondsPerMillion = cpuSeconds / (float64(s.out.Sent) / 1e6)
	}
	for _, smp := range s.out.Samples {
		s.out.RSSMaxMiB = max(s.out.RSSMaxMiB, smp.RSSMiB)
	}
	for _, sc := range s.out.Scrapes {
		if sc.useful() {
			s.out.ScrapesUseful++
		}
	}
	s.out.ScrapeP50 = ToMillis(percentile(s.out.Scrapes, 50))
	s.out.ScrapeP99 = ToMillis(percentile(s.out.Scrapes, 99))
	if n := len(s.out.Scrapes); n > 0 {
		s.out.ScrapeWireBytes = s.out.Scrapes[n-1].WireBytes
	}
}

// startMonitors starts the sampler (CPU, RSS, throughput every SampleInterval) and the scraper
// (every ScrapeInterval, both collectors at the same instant); the returned func stops both.
func startMonitors(ctx context.Context, o Options, sides []*side, scraper *Scraper, start time.Time, progress func(*side) int64) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup

	wg.Add(1)
	go func() {
		defer wg.Done()
		type last struct {
			at       time.Time
			cpu      float64
			progress int64
		}
		prev := make([]last, len(sides))
		for i, s := range sides {
			c, _, _ := s.proc.Usage()
			prev[i] = last{at: start, cpu: c, progress: progress(s)}
		}
		tick := time.NewTicker(o.SampleInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				for i, s := range sides {
					c, rss, err := s.proc.Usage()
					if err != nil {
						continue
					}
					p := progress(s)
					dt := now.Sub(prev[i].at).Seconds()
					smp := Sample{
						At:          now.Sub(start).Seconds(),
						CPUPercent:  (c - prev[i].cpu) / dt * 100,
						RSSMiB:      float64(rss) / (1 << 20),
						SpansPerSec: float64(p-prev[i].progress) / dt,
					}
					prev[i] = last{at: now, cpu: c, progress: p}
					s.mu.Lock()
					s.out.Samples = append(s.out.Samples, smp)
					s.mu.Unlock()
				}
			}
		}
	}()

	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(o.ScrapeInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				var scrapes sync.WaitGroup
				for _, s := range sides {
					scrapes.Add(1)
					go func() {
						defer scrapes.Done()
						at := time.Since(start)
						sc, err := scraper.Get(ctx, s.ep.metricsURL(), nil)
						sc.At = at
						if err != nil {
							// A failed scrape is a gap in Prometheus: count it at the timeout, the
							// least it cost, so that it weighs on the percentiles.
							sc.Latency = o.ScrapeInterval
							sc.Failed = true
						}
						s.mu.Lock()
						s.out.Scrapes = append(s.out.Scrapes, sc)
						s.mu.Unlock()
					}()
				}
				scrapes.Wait()
			}
		}
	}()

	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}

// drain waits until each collector's calls counters add up to the spans it was sent, or
// DrainTimeout passes; what is still missing then is lost. Nothing can match before the next
// metrics flush, so the first check waits one flush interval: polling earlier would only render
// large pages for nothing and load the machine. Both collectors are checked in parallel, since a
// page of 100k series can take minutes to render on a busy machine.
func drain(ctx context.Context, o Options, sides []*side) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(o.FlushInterval + time.Second):
	}
	scraper := NewCountingScraper(o.DrainTimeout)
	defer scraper.Close()
	deadline := time.Now().Add(o.DrainTimeout)
	var wg sync.WaitGroup
	for _, s := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lastErr error
			for {
				n, err := scraper.SumCounter(ctx, s.ep.metricsURL(), o.CallsMetric)
				lastErr = err
				if err == nil {
					s.out.Counted = int64(n)
					s.out.Lost = s.out.Sent - s.out.Counted
					log.Printf("%s: counted %d of %d spans", s.c.Name, s.out.Counted, s.out.Sent)
					if s.out.Lost == 0 {
						return
					}
				} else {
					log.Printf("%s: %v", s.c.Name, err)
				}
				if time.Now().After(deadline) || ctx.Err() != nil {
					break
				}
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			if lastErr != nil {
				// Unverified is not the same as lost, but a run that cannot show it lost nothing fails.
				s.out.Error = joinErr(s.out.Error, "calls counters not read within the drain timeout: "+lastErr.Error())
				s.out.Lost = s.out.Sent - s.out.Counted
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
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
