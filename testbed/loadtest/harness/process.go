// Package harness is what every mode of the testbed stands on: collectors run as child processes
// (pinned to CPUs where a mode asks), their endpoints, Prometheus-style scrapes, span pools built
// once and sent by a paced or closed-loop generator, the Kafka backlog, the machine a run happened
// on, and the small statistics and text helpers the reports share.
package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"syscall"
	"time"

	"github.com/shirou/gopsutil/v4/process"
)

// CollectorGOMAXPROCS is the Go scheduler width every collector under test gets, so that both
// binaries have the same parallelism whatever the machine.
const CollectorGOMAXPROCS = "2"

// stopGrace is how long a collector has to shut down after SIGTERM before it is killed.
const stopGrace = 20 * time.Second

// Collector is one distribution under test: a binary and the config it runs.
type Collector struct {
	// Name labels the collector in results: "ours" or "stock".
	Name string
	// Binary is the collector executable.
	Binary string
	// Config is the collector config; endpoints come from the environment (see Endpoints).
	Config string
	// Overlays are further config files merged over Config in order, their lists appended to
	// Config's (the collector's confmap.enableMergeAppendOption gate), so that an overlay adds a
	// component to service::extensions without repeating the ones Config lists.
	Overlays []string
}

// Process is a running collector: its child process and the probe the sampler reads.
type Process struct {
	name  string
	cmd   *exec.Cmd
	probe *process.Process
	log   *os.File
	done  chan struct{}
	err   error
}

// StartCollector runs c as a child process with env added to this process's environment,
// GOMAXPROCS pinned, and its output written to logPath; with cpus, the process is bound to them
// from its first instruction (see startOnCPUs).
func StartCollector(c Collector, env map[string]string, logPath string, cpus []int) (*Process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("cannot create collector log %q: %w", logPath, err)
	}
	cmd := exec.Command(c.Binary, c.Args()...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+CollectorGOMAXPROCS)
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	start := cmd.Start
	if len(cpus) > 0 {
		start = func() error { return startOnCPUs(cmd, cpus) }
	}
	if err := start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("cannot start %s (%s): %w", c.Name, c.Binary, err)
	}
	p := &Process{name: c.Name, cmd: cmd, log: logFile, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	p.probe, err = process.NewProcess(int32(cmd.Process.Pid))
	if err != nil {
		_ = p.Stop()
		return nil, fmt.Errorf("cannot watch %s pid=%d: %w", c.Name, cmd.Process.Pid, err)
	}
	return p, nil
}

// mergeAppendGate makes the collector append the lists of later --config files to earlier ones
// instead of replacing them.
const mergeAppendGate = "confmap.enableMergeAppendOption"

// Args is the command line that runs c: its config, then its overlays.
func (c Collector) Args() []string {
	args := []string{"--config", c.Config}
	for _, o := range c.Overlays {
		args = append(args, "--config", o)
	}
	if len(c.Overlays) > 0 {
		args = append(args, "--feature-gates="+mergeAppendGate)
	}
	return args
}

// Exited reports whether the process ended, and how: a clean exit is an error too
// ("exit status 0"), since a collector under test never ends by itself.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, errOrExit(p.err)
	default:
		return false, nil
	}
}

// CPUs returns the CPUs the process may run on.
func (p *Process) CPUs() ([]int, error) { return cpusOf(p.cmd.Process.Pid) }

// Usage reads the CPU time (user + system, seconds) used so far and the resident set size.
func (p *Process) Usage() (cpuSeconds float64, rssBytes uint64, err error) {
	t, err := p.probe.Times()
	if err != nil {
		return 0, 0, err
	}
	m, err := p.probe.MemoryInfo()
	if err != nil {
		return 0, 0, err
	}
	return t.User + t.System, m.RSS, nil
}

// Stop sends SIGTERM, waits for a graceful shutdown and kills the process if it hangs. An exit
// status caused by our own signal is not an error.
func (p *Process) Stop() error { return p.StopWithin(stopGrace) }

// StopWithin is Stop with grace instead of the default 20 s.
func (p *Process) StopWithin(grace time.Duration) error {
	defer p.log.Close()
	if exited, err := p.Exited(); exited {
		return fmt.Errorf("%s exited before it was stopped: %w", p.name, err)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within %s of SIGTERM", p.name, grace)
	}
	var exitErr *exec.ExitError
	if errors.As(p.err, &exitErr) && !exitErr.Success() {
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
			return nil
		}
		return fmt.Errorf("%s exited with %w after SIGTERM", p.name, p.err)
	}
	return nil
}

// Kill ends the process at once (SIGKILL) and waits for it: the way out for a collector whose
// memory passes the cap a run sets, before it takes the host down with it.
func (p *Process) Kill() {
	defer p.log.Close()
	_ = p.cmd.Process.Kill()
	<-p.done
}

func errOrExit(err error) error {
	if err == nil {
		return errors.New("exit status 0")
	}
	return err
}
