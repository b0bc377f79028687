package loadtest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// A probe runs one collector at a time, alone on the host, and measures one property of it
// (memory per series, ingest under scrapes, the decode floor, flush lateness). The comparison
// scenarios of Run put two collectors side by side instead; a probe at a million series cannot,
// because two such processes together would not fit in the host's memory.

// sentPointsMetric is the exporter's own count of metric points it exported. Both distributions
// feed their metrics exporter through exporterhelper, so this counter moves exactly when a flush
// of the trace-to-metrics connector has been delivered, whatever the connector.
const sentPointsMetric = "otelcol_exporter_sent_metric_points_total"

// soloEnv is what every probe collector gets on top of its endpoints.
type soloEnv map[string]string

// solo is one collector running alone for a probe.
type solo struct {
	c     Collector
	ep    endpoints
	proc  *Process
	watch *rssWatch
	// pprof is the address given to the pprof extension of configs that enable it.
	pprof string
	// killed is set when the watch killed the process over the RSS cap.
	killed bool
	// unbind gives the testbed back the CPUs it left to a pinned collector; nil when not pinned.
	unbind func()
	// placement says where the collector and the testbed ran, for the report.
	placement string
	// cpus are the CPUs the collector was pinned to; nil when it shared the host's.
	cpus []int
}

// startSolo starts c with fresh endpoints (and a pprof endpoint, used by configs that enable the
// pprof extension), waits until it serves health and metrics, and starts its RSS watch. With pin
// above 0, the collector runs alone on that many CPUs and the testbed on the others until stop
// (see cpuSplit).
func startSolo(ctx context.Context, c Collector, o Options, label string, env soloEnv, pin int) (*solo, error) {
	ep, err := newEndpoints()
	if err != nil {
		return nil, err
	}
	if o.CPUProfile > 0 {
		if c, err = withPprof(c, o.RawDir); err != nil {
			return nil, err
		}
	}
	all := ep.env()
	pprofPort, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	all[pprofEnv] = fmt.Sprintf("127.0.0.1:%d", pprofPort[0])
	if o.FlushInterval > 0 {
		all[flushEnv] = o.FlushInterval.String()
	}
	for k, v := range env {
		all[k] = v
	}
	logPath := filepath.Join(o.RawDir, label+".log")
	split, pinned := splitCPUs(pin)
	var cpus []int
	if pin > 0 && pinned {
		cpus = split.collector
	}
	proc, err := startCollector(c, all, logPath, cpus)
	if err != nil {
		return nil, err
	}
	s := &solo{c: c, ep: ep, proc: proc, cpus: cpus}
	if len(cpus) > 0 {
		if s.unbind, err = bindProcess(split.testbed); err != nil {
			stopErr := proc.StopWithin(probeStopGrace)
			return nil, errors.Join(err, stopErr)
		}
		got, err := cpusOf(proc.cmd.Process.Pid)
		if err != nil || !slices.Equal(got, cpus) {
			s.unbind()
			stopErr := proc.StopWithin(probeStopGrace)
			return nil, errors.Join(fmt.Errorf("%s is not bound to CPU(s) %s (its CPUs: %v)", c.Name, joinInts(cpus), got), err, stopErr)
		}
		s.placement = fmt.Sprintf("alone on CPU(s) %s, the testbed on CPU(s) %s", joinInts(cpus), joinInts(split.testbed))
	} else if pin > 0 {
		s.placement = fmt.Sprintf("not pinned (fewer than %d CPUs, or not Linux): it shared the CPUs with the testbed", pin+1)
	}
	s.watch = newRSSWatch(proc, o.SampleInterval, o.RSSCap)
	ready := NewScraper(5 * time.Second)
	defer ready.Close()
	// Health turns ready once every component started, the metrics server included; the floor
	// config has no metrics endpoint to wait for.
	if err := ready.WaitReady(ctx, ep.healthURL(), readyTimeout); err != nil {
		_, stopErr := s.stop()
		return nil, errors.Join(fmt.Errorf("%s did not become ready (log in %s): %w", c.Name, logPath, err), stopErr)
	}
	s.pprof = all[pprofEnv]
	return s, nil
}

// pprofEnv is the environment variable the testbed's pprof configs read the extension's endpoint
// from.
const pprofEnv = "PPROF_ENDPOINT"

// probeStopGrace is how long a probe's collector may take to shut down: its final flush of a
// million series takes longer than the comparison scenarios' 20 s on this host.
const probeStopGrace = 2 * time.Minute

// stop ends the collector: SIGTERM and a graceful shutdown, or nothing if the watch killed it.
// It returns how long the shutdown took.
func (s *solo) stop() (time.Duration, error) {
	if s.unbind != nil {
		s.unbind()
		s.unbind = nil
	}
	s.killed = s.watch.close()
	if s.killed {
		return 0, nil
	}
	start := time.Now()
	err := s.proc.StopWithin(probeStopGrace)
	return time.Since(start), err
}

// rssWatch samples a collector's CPU and RSS every interval and kills it when its RSS passes the
// cap, so that a collector that grows without bound ends as a recorded result ("killed at X GiB
// after Y s") instead of taking down a host other jobs share.
type rssWatch struct {
	proc  *Process
	start time.Time
	cap   uint64

	mu       sync.Mutex
	samples  []Sample
	killedAt *Sample
	lastCPU  float64
	lastAt   time.Time

	killed chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup
}

func newRSSWatch(proc *Process, interval time.Duration, capBytes uint64) *rssWatch {
	w := &rssWatch{proc: proc, start: time.Now(), cap: capBytes, killed: make(chan struct{}), done: make(chan struct{})}
	w.lastCPU, _, _ = proc.Usage()
	w.lastAt = w.start
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-w.done:
				return
			case now := <-tick.C:
				if !w.sample(now) {
					return
				}
			}
		}
	}()
	return w
}

// sample takes one reading; it returns false once the process is gone.
func (w *rssWatch) sample(now time.Time) bool {
	c, rss, err := w.proc.Usage()
	if err != nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	smp := Sample{
		At:         now.Sub(w.start).Seconds(),
		CPUPercent: (c - w.lastCPU) / now.Sub(w.lastAt).Seconds() * 100,
		RSSMiB:     float64(rss) / (1 << 20),
	}
	w.lastCPU, w.lastAt = c, now
	w.samples = append(w.samples, smp)
	if w.cap > 0 && rss > w.cap {
		w.proc.Kill()
		w.killedAt = &smp
		close(w.killed)
		return false
	}
	return true
}

// Killed is closed when the watch killed the process.
func (w *rssWatch) Killed() <-chan struct{} { return w.killed }

// close stops sampling and tells whether the process was killed over the cap.
func (w *rssWatch) close() bool {
	close(w.done)
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.killedAt != nil
}

// Samples returns a copy of the readings so far.
func (w *rssWatch) Samples() []Sample {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Sample(nil), w.samples...)
}

// KilledAt returns the reading that passed the cap, if any.
func (w *rssWatch) KilledAt() (Sample, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.killedAt == nil {
		return Sample{}, false
	}
	return *w.killedAt, true
}

// rssBetween returns the largest and the last RSS reading in [from, to) seconds since the start
// of the watch.
func rssBetween(samples []Sample, from, to float64) (maxMiB, lastMiB float64) {
	for _, s := range samples {
		if s.At >= from && s.At < to {
			maxMiB = max(maxMiB, s.RSSMiB)
			lastMiB = s.RSSMiB
		}
	}
	return maxMiB, lastMiB
}

// cpuBetween returns the mean CPU % of the readings in [from, to).
func cpuBetween(samples []Sample, from, to float64) float64 {
	var sum float64
	var n int
	for _, s := range samples {
		if s.At >= from && s.At < to {
			sum += s.CPUPercent
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// flushWatch follows a collector's deliveries of metrics to its exporter by reading
// sentPointsMetric from its own telemetry every interval. A flush that the connector sends in
// several chunks shows as several deliveries close together.
type flushWatch struct {
	start time.Time

	mu         sync.Mutex
	deliveries []Delivery

	done chan struct{}
	wg   sync.WaitGroup
}

// Delivery is a moment a collector's metrics exporter was seen to have received new points.
type Delivery struct {
	// At is seconds since the watch started.
	At float64 `json:"at"`
	// Points is how many points arrived since the previous reading.
	Points int64 `json:"points"`
}

func newFlushWatch(ctx context.Context, s *solo, start time.Time, interval time.Duration) *flushWatch {
	f := &flushWatch{start: start, done: make(chan struct{})}
	scraper := NewCountingScraper(5 * time.Second)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer scraper.Close()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		var last float64
		for {
			select {
			case <-f.done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				n, err := scraper.SumCounter(ctx, s.ep.telemetryURL(), sentPointsMetric)
				if err != nil || n <= last {
					continue
				}
				d := Delivery{At: time.Since(start).Seconds(), Points: int64(n - last)}
				last = n
				f.mu.Lock()
				f.deliveries = append(f.deliveries, d)
				f.mu.Unlock()
			}
		}
	}()
	return f
}

// close stops the watch and returns the deliveries seen.
func (f *flushWatch) close() []Delivery {
	close(f.done)
	f.wg.Wait()
	return f.snapshot()
}

// snapshot returns the deliveries seen so far.
func (f *flushWatch) snapshot() []Delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Delivery(nil), f.deliveries...)
}

// flushes groups deliveries into flushes: deliveries less than half an interval after the start of
// the current flush belong to it (the chunks of one flush).
func flushes(deliveries []Delivery, interval time.Duration) []Delivery {
	var out []Delivery
	for _, d := range deliveries {
		if n := len(out); n > 0 && d.At-out[n-1].At < interval.Seconds()/2 {
			out[n-1].Points += d.Points
			continue
		}
		out = append(out, d)
	}
	return out
}

// load runs a closed-loop generator (as fast as the collector acknowledges) against a solo
// collector until stop is closed.
type load struct {
	gen  *Generator
	sink *OTLPSink
	stop chan struct{}
	wg   sync.WaitGroup
}

func startLoad(pool *Pool, s *solo, concurrency int) (*load, error) {
	sink, err := NewOTLPSink(pool, s.ep.otlpGRPC)
	if err != nil {
		return nil, err
	}
	l := &load{gen: NewGenerator(pool, sink, 0, concurrency), sink: sink, stop: make(chan struct{})}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.gen.Run(l.stop)
	}()
	return l, nil
}

// end stops sending, waits for requests in flight, and returns the spans acknowledged.
func (l *load) end() int64 {
	close(l.stop)
	l.wg.Wait()
	_ = l.sink.Close()
	return l.gen.Acked()
}

// wait sleeps for d, or less if the collector is killed or ctx ends; it returns false then.
func wait(ctx context.Context, s *solo, d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-s.watch.Killed():
		return false
	case <-ctx.Done():
		return false
	}
}

// eachSide runs fn for each of p's collectors in turn on pool and appends their runs to res.
func eachSide(ctx context.Context, p Probe, pc ProbeCollectors, pool *Pool, res *ProbeResult,
	fn func(c Collector, run *ProbeRun) error,
) error {
	return runSides(ctx, p, pc, pool, res, p.Sides, 0, fn)
}

// eachSideOnPool runs fn for each of p's collectors in turn on the pool of p's first shape, and
// drops the pool afterwards so that its memory goes back before the next probe.
func eachSideOnPool(ctx context.Context, p Probe, pc ProbeCollectors, pools *Pools, res *ProbeResult,
	fn func(c Collector, pool *Pool, run *ProbeRun) error,
) error {
	shape := p.Shapes[0]
	pool, err := pools.Get(shape, p.SpansPerRequest)
	if err != nil {
		return err
	}
	defer pools.Drop(shape, p.SpansPerRequest)
	return eachSide(ctx, p, pc, pool, res, func(c Collector, run *ProbeRun) error {
		return fn(c, pool, run)
	})
}

// runSides runs fn for the collectors named in sides, in that order, on pool and appends their
// runs, marked with round (0 outside rounds), to res.
func runSides(ctx context.Context, p Probe, pc ProbeCollectors, pool *Pool, res *ProbeResult, sides []string, round int,
	fn func(c Collector, run *ProbeRun) error,
) error {
	for _, name := range sides {
		c, err := pc.byName(name, p.Kind)
		if err != nil {
			return err
		}
		run := ProbeRun{Collector: name, Round: round, Binary: c.Binary, Config: c.Config, Series: pool.Shape.Series(), LoadAverage: LoadAverage()}
		if err := fn(c, &run); err != nil {
			run.Error = joinErr(run.Error, err.Error())
		}
		res.Runs = append(res.Runs, run)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}
