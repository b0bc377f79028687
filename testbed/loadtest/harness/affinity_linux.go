//go:build linux

package harness

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// SplitCPUs gives the last n CPUs this process may run on to the collector and the others to
// the testbed; ok is false with fewer than n+1 (the testbed needs one at least).
func SplitCPUs(n int) (CPUSplit, bool) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil || n < 1 || all.Count() < n+1 {
		return CPUSplit{}, false
	}
	cpus := cpuList(&all)
	return CPUSplit{Collector: cpus[len(cpus)-n:], Testbed: cpus[:len(cpus)-n]}, true
}

// startOnCPUs starts cmd bound to cpus. A child inherits the affinity of the thread that forks
// it, so the forking thread is bound for the time of the fork: the collector runs on cpus from
// its first instruction, before its runtime starts threads of its own.
func startOnCPUs(cmd *exec.Cmd, cpus []int) error {
	runtime.LockOSThread()
	var orig, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("cannot read the CPU affinity: %w", err)
	}
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("cannot bind to CPU(s) %v: %w", cpus, err)
	}
	startErr := cmd.Start()
	if err := unix.SchedSetaffinity(0, &orig); err != nil {
		// The thread stays locked to this goroutine, so it never runs other goroutines on the
		// collector's CPU; it ends with the goroutine. The collector does not run unmeasured.
		if startErr == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		return fmt.Errorf("cannot restore the CPU affinity: %w", err)
	}
	runtime.UnlockOSThread()
	return startErr
}

// BindProcess binds every thread of this process to cpus and returns a function that restores
// the affinity they had. Threads the runtime starts later inherit it from the thread that
// starts them, so after a pass that finds no new thread the whole process is bound.
func BindProcess(cpus []int) (restore func(), err error) {
	var orig, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		return nil, fmt.Errorf("cannot read the CPU affinity: %w", err)
	}
	for _, c := range cpus {
		set.Set(c)
	}
	restore = func() { _, _ = eachThread(func(tid int) error { return unix.SchedSetaffinity(tid, &orig) }) }
	if _, err := eachThread(func(tid int) error { return unix.SchedSetaffinity(tid, &set) }); err != nil {
		restore()
		return nil, fmt.Errorf("cannot bind the testbed to CPUs %v: %w", cpus, err)
	}
	return restore, nil
}

// eachThread calls f for every thread of this process, again until a pass finds no thread it
// had not seen. A thread that ended meanwhile is not an error.
func eachThread(f func(tid int) error) (int, error) {
	seen := map[int]bool{}
	for pass := 0; pass < 5; pass++ {
		entries, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return len(seen), err
		}
		fresh := false
		for _, e := range entries {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || seen[tid] {
				continue
			}
			seen[tid], fresh = true, true
			if err := f(tid); err != nil && err != unix.ESRCH {
				return len(seen), fmt.Errorf("thread %d: %w", tid, err)
			}
		}
		if !fresh {
			break
		}
	}
	return len(seen), nil
}

// cpusOf returns the CPUs the process pid may run on.
func cpusOf(pid int) ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &set); err != nil {
		return nil, err
	}
	return cpuList(&set), nil
}

func cpuList(set *unix.CPUSet) []int {
	var cpus []int
	for i := range len(set) * 64 {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus
}
