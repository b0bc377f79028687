package gcheadroom // import "github.com/otelcol-red/otelcol-red/extension/gcheadroom"

import (
	"errors"
	"fmt"
	"time"
)

// Config bounds the Go garbage collector's headroom: how far the heap may grow above what
// the last collection found live before the next collection starts.
type Config struct {
	// MaxHeadroomMiB is the most the heap may grow above the live heap between two
	// collections, in MiB. While GOGC (default 100) allows less than this, GOGC applies
	// as it is; above it the extension lowers the GC percent so that live × percent / 100
	// stays at this size. Default 64.
	MaxHeadroomMiB int64 `mapstructure:"max_headroom_mib"`
	// MinHeadroomMiB is reserved on the Go heap at Start and never written, while GOGC is not
	// set in the environment: the collector counts it live, so the heap may grow by at least
	// this much between collections, and pages never written are never resident. A collector
	// at low cardinality keeps 10–20 MB live and decodes hundreds of MB of requests a second;
	// with GOGC=100 alone it collects dozens of times a second. A GOGC set by hand is left as
	// it is; 0 turns this off. Above max_headroom_mib, max_headroom_mib is reserved. Default 32.
	MinHeadroomMiB int64 `mapstructure:"min_headroom_mib"`
	// MinGCPercent is the lowest GC percent the extension sets, whatever the live heap:
	// it bounds the CPU the collections take when the live heap is many times
	// max_headroom_mib. At the default 10 it binds above 640 MiB live (64 MiB of
	// headroom is 10% of it), beyond a million series. Default 10.
	MinGCPercent int `mapstructure:"min_gc_percent"`
	// CheckInterval is how often the live heap is read and the GC percent adjusted.
	// Default 1s.
	CheckInterval time.Duration `mapstructure:"check_interval"`
	// MemoryLimitCountsOffHeap, while a Go memory limit is in effect (GOMEMLIMIT), lowers it
	// by the bytes components keep outside the Go heap (cachedprom's series store and gzip
	// snapshot), which the runtime does not count: the process as a whole then stays within
	// the limit set for it, not its Go heap alone. It never lowers the limit below a quarter
	// of GOMEMLIMIT, and does nothing without a memory limit. Default true.
	MemoryLimitCountsOffHeap bool `mapstructure:"memory_limit_counts_off_heap"`
	// MemoryLimitPercentage, when GOMEMLIMIT is not set, sets the Go memory limit at Start to
	// this percentage of the memory limit of the cgroup the process runs in (a container's:
	// cgroup v2 memory.max or v1 memory.limit_in_bytes, the lowest up the hierarchy), so that
	// the runtime knows the container's limit without a GOMEMLIMIT kept in step with it by
	// hand. GOMEMLIMIT, when set, wins. memory_limit_counts_off_heap then applies to this limit
	// as to GOMEMLIMIT. 0, or no cgroup limit: no memory limit, as without the extension.
	// Default 0.
	MemoryLimitPercentage int `mapstructure:"memory_limit_percentage"`
	// prevent unkeyed literal initialization
	_ struct{}
}

const (
	defaultMaxHeadroomMiB = 64
	defaultMinHeadroomMiB = 32
	defaultMinGCPercent   = 10
	defaultCheckInterval  = time.Second
)

func createDefaultConfig() *Config {
	return &Config{
		MaxHeadroomMiB: defaultMaxHeadroomMiB,
		MinHeadroomMiB: defaultMinHeadroomMiB,
		MinGCPercent:   defaultMinGCPercent,
		CheckInterval:  defaultCheckInterval,

		MemoryLimitCountsOffHeap: true,
	}
}

// Validate names the key at fault.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxHeadroomMiB < 1 {
		errs = append(errs, fmt.Errorf("max_headroom_mib: %d, must be at least 1", c.MaxHeadroomMiB))
	}
	if c.MinHeadroomMiB < 0 {
		errs = append(errs, fmt.Errorf("min_headroom_mib: %d, must be at least 0", c.MinHeadroomMiB))
	}
	if c.MinGCPercent < 1 || c.MinGCPercent > 100 {
		errs = append(errs, fmt.Errorf("min_gc_percent: %d, must be 1..100", c.MinGCPercent))
	}
	if c.MemoryLimitPercentage < 0 || c.MemoryLimitPercentage > 100 {
		errs = append(errs, fmt.Errorf("memory_limit_percentage: %d, must be 0..100", c.MemoryLimitPercentage))
	}
	if c.CheckInterval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("check_interval: %v, must be at least 10ms", c.CheckInterval))
	}
	return errors.Join(errs...)
}
