package solo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// probeStopGrace is how long a probe's collector may take to shut down: its final flush of a
// million series takes longer than the comparison scenarios' 20 s on this host.
const probeStopGrace = 2 * time.Minute

// Instance is one collector running alone for a probe, its CPU and RSS watched from its start.
type Instance struct {
	c     harness.Collector
	ep    harness.Endpoints
	proc  *harness.Process
	watch *rssWatch
	// pprof is the address given to the pprof extension of configs that enable it.
	pprof string
	// unbind gives the testbed back the CPUs it left to a pinned collector; nil when not pinned.
	unbind func()
	// placement says where the collector and the testbed ran, for the report.
	placement string
	// cpus are the CPUs the collector was pinned to; nil when it shared the host's.
	cpus []int
}

// Start starts c with fresh endpoints (and a pprof endpoint, used by configs that enable the
// pprof extension) and env, its log at label.log in o.RawDir, waits until it serves health and
// metrics, and starts its RSS watch. With pin above 0, the collector runs alone on that many CPUs
// and the testbed on the others until Stop (see harness.CPUSplit).
func Start(ctx context.Context, c harness.Collector, o harness.Options, label string, env map[string]string, pin int) (*Instance, error) {
	ep, err := harness.NewEndpoints()
	if err != nil {
		return nil, err
	}
	if o.CPUProfile > 0 {
		if c, err = withPprof(c, o.RawDir); err != nil {
			return nil, err
		}
	}
	all := ep.Env()
	pprofPort, err := harness.FreePorts(1)
	if err != nil {
		return nil, err
	}
	all[pprofEnv] = fmt.Sprintf("127.0.0.1:%d", pprofPort[0])
	if o.FlushInterval > 0 {
		all[harness.FlushEnv] = o.FlushInterval.String()
	}
	for k, v := range env {
		all[k] = v
	}
	logPath := filepath.Join(o.RawDir, label+".log")
	split, pinned := harness.SplitCPUs(pin)
	var cpus []int
	if pin > 0 && pinned {
		cpus = split.Collector
	}
	proc, err := harness.StartCollector(c, all, logPath, cpus)
	if err != nil {
		return nil, err
	}
	s := &Instance{c: c, ep: ep, proc: proc, cpus: cpus}
	if len(cpus) > 0 {
		if s.unbind, err = harness.BindProcess(split.Testbed); err != nil {
			stopErr := proc.StopWithin(probeStopGrace)
			return nil, errors.Join(err, stopErr)
		}
		got, err := proc.CPUs()
		if err != nil || !slices.Equal(got, cpus) {
			s.unbind()
			stopErr := proc.StopWithin(probeStopGrace)
			return nil, errors.Join(fmt.Errorf("%s is not bound to CPU(s) %s (its CPUs: %v)", c.Name, joinInts(cpus), got), err, stopErr)
		}
		s.placement = fmt.Sprintf("alone on CPU(s) %s, the testbed on CPU(s) %s", joinInts(cpus), joinInts(split.Testbed))
	} else if pin > 0 {
		s.placement = fmt.Sprintf("not pinned (fewer than %d CPUs, or not Linux): it shared the CPUs with the testbed", pin+1)
	}
	s.watch = newRSSWatch(proc, o.SampleInterval, o.RSSCap)
	ready := harness.NewScraper(5 * time.Second)
	defer ready.Close()
	// Health turns ready once every component started, the metrics server included; the floor
	// config has no metrics endpoint to wait for.
	if err := ready.WaitReady(ctx, ep.HealthURL(), harness.ReadyTimeout); err != nil {
		_, stopErr := s.Stop()
		return nil, errors.Join(fmt.Errorf("%s did not become ready (log in %s): %w", c.Name, logPath, err), stopErr)
	}
	s.pprof = all[pprofEnv]
	return s, nil
}

// joinInts writes CPU numbers as "0, 1".
func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// Stop ends the collector: SIGTERM and a graceful shutdown, or nothing if the watch killed it.
// It returns how long the shutdown took.
func (s *Instance) Stop() (time.Duration, error) {
	if s.unbind != nil {
		s.unbind()
		s.unbind = nil
	}
	if s.watch.close() {
		return 0, nil
	}
	start := time.Now()
	err := s.proc.StopWithin(probeStopGrace)
	return time.Since(start), err
}

// Finish stops the collector and fills the run's placement, shutdown time, samples, RSS maximum
// and kill reading.
func (s *Instance) Finish(run *ProbeRun) error {
	run.Placement = s.placement
	took, err := s.Stop()
	run.StopSeconds = took.Seconds()
	run.Samples = s.watch.Samples()
	run.RSSMaxMiB, _ = RSSBetween(run.Samples, 0, math.MaxFloat64)
	if k, ok := s.watch.KilledAt(); ok {
		run.Killed = &k
	}
	return err
}

// Wait sleeps for d, or less if the collector is killed or ctx ends; it returns false then.
func (s *Instance) Wait(ctx context.Context, d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-s.watch.Killed():
		return false
	case <-ctx.Done():
		return false
	}
}

// Name is the collector's name.
func (s *Instance) Name() string { return s.c.Name }

// MetricsURL is the collector's Prometheus endpoint.
func (s *Instance) MetricsURL() string { return s.ep.MetricsURL() }

// TelemetryURL is the collector's own telemetry.
func (s *Instance) TelemetryURL() string { return s.ep.TelemetryURL() }

// PprofURL is /debug/pprof/<query> of the pprof extension, for configs that enable it on
// ${env:PPROF_ENDPOINT}.
func (s *Instance) PprofURL(query string) string {
	return "http://" + s.pprof + "/debug/pprof/" + query
}

// Elapsed is the time since the collector started, the clock of its samples.
func (s *Instance) Elapsed() time.Duration { return time.Since(s.watch.start) }

// Samples returns the CPU and RSS readings so far.
func (s *Instance) Samples() []harness.Sample { return s.watch.Samples() }

// Killed is closed when the RSS cap ended the collector.
func (s *Instance) Killed() <-chan struct{} { return s.watch.Killed() }

// KilledAt returns the reading that passed the RSS cap, if any.
func (s *Instance) KilledAt() (harness.Sample, bool) { return s.watch.KilledAt() }

// Exited reports whether the collector ended, and how.
func (s *Instance) Exited() (bool, error) { return s.proc.Exited() }

// StartSteal starts measuring the steal of the collector's CPUs (the host's when not pinned).
func (s *Instance) StartSteal() StealMeter { return StartSteal(s.cpus) }
