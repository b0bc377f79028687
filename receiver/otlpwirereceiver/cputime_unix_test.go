//go:build unix

package otlpwirereceiver

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) the test process used so
// far. On a machine shared with other work it measures what the benchmark
// itself spent, where wall time also counts waiting for a core.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
