package gcheadroom // import "github.com/otelcol-red/otelcol-red/extension/gcheadroom"

import (
	"context"
	"errors"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"

	"github.com/otelcol-red/otelcol-red/internal/offheap"
)

// liveHeapMetric is the heap the last collection marked live (runtime/metrics, Go 1.21+):
// what the GC percent multiplies into the next heap goal.
const liveHeapMetric = "/gc/heap/live:bytes"

// running guards the process-wide GC percent: two tuners would undo each other's settings.
var running atomic.Bool

// tuner is the extension: one goroutine that reads the live heap every check_interval and
// sets the GC percent for it, and, under a memory limit, sets the limit for what is mapped
// outside the Go heap.
type tuner struct {
	cfg    *Config
	logger *zap.Logger
	tel    *telemetry

	readLive    func() uint64               // the live heap in bytes; tests replace it
	setPercent  func(int) int               // debug.SetGCPercent; tests replace it
	readOffHeap func() int64                // offheap.Bytes; tests replace it
	setLimit    func(int64) int64           // debug.SetMemoryLimit; tests replace it
	readCgroup  func() (int64, bool)        // the cgroup's memory limit; tests replace it
	lookupEnv   func(string) (string, bool) // os.LookupEnv; tests replace it

	base      int          // the GC percent in effect at Start (GOGC), restored at Shutdown
	reserve   []byte       // min_headroom_mib of heap never written, counted live; nil when GOGC is set
	baseLimit int64        // the memory limit to keep: GOMEMLIMIT, or memory_limit_percentage of the cgroup's
	found     int64        // the memory limit in effect at Start, restored at Shutdown
	setBase   bool         // Start set baseLimit from the cgroup's limit
	tunes     bool         // the GC percent is adjusted (GOGC is not off)
	limits    bool         // the memory limit is adjusted (one is in effect, and the config asks)
	owns      bool         // Start took running
	percent   atomic.Int64 // the GC percent set last
	live      atomic.Int64 // the live heap read last
	limit     atomic.Int64 // the memory limit set last
	offHeap   atomic.Int64 // the off-heap bytes read last
	stop      chan struct{}
	done      chan struct{}
}

func newTuner(set component.TelemetrySettings, cfg *Config) (*tuner, error) {
	t := &tuner{cfg: cfg, logger: set.Logger, readLive: newLiveHeapReader(), setPercent: debug.SetGCPercent,
		readOffHeap: offheap.Bytes, setLimit: debug.SetMemoryLimit, readCgroup: readCgroupMemoryLimit, lookupEnv: os.LookupEnv}
	tel, err := newTelemetry(set, t)
	if err != nil {
		return nil, err
	}
	t.tel = tel
	return t, nil
}

// newLiveHeapReader returns a function that reads liveHeapMetric into one sample it keeps,
// so a check allocates nothing.
func newLiveHeapReader() func() uint64 {
	sample := []metrics.Sample{{Name: liveHeapMetric}}
	return func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return sample[0].Value.Uint64()
	}
}

// Start reads the GC percent and the memory limit in effect and starts adjusting them. With
// GOGC=off the collector has chosen no collections (GOMEMLIMIT alone, say), and the extension
// leaves the percent so; it still adjusts the memory limit, which then alone starts
// collections, so it matters most there.
func (t *tuner) Start(context.Context, component.Host) error {
	if !running.CompareAndSwap(false, true) {
		return errors.New("gcheadroom: another gcheadroom extension is running; the GC percent is one per process, configure one")
	}
	t.owns = true
	// debug.SetGCPercent is the only way to read it: set any value and put the old one back.
	t.base = t.setPercent(100)
	t.setPercent(t.base)
	t.percent.Store(int64(t.base))
	t.tunes = t.base >= 0
	if _, set := t.lookupEnv("GOGC"); !set && t.tunes && t.cfg.MinHeadroomMiB > 0 {
		t.reserveHeadroom()
	}
	if !t.tunes {
		t.logger.Info("GOGC=off: the GC percent is left as it is")
	}
	t.found = t.setLimit(-1) // a negative limit reads it
	t.baseLimit = t.found
	if t.found == math.MaxInt64 && t.cfg.MemoryLimitPercentage > 0 {
		t.limitFromCgroup()
	}
	t.limit.Store(t.baseLimit)
	t.limits = t.cfg.MemoryLimitCountsOffHeap && t.baseLimit < math.MaxInt64
	if !t.tunes && !t.limits {
		return nil
	}
	t.stop, t.done = make(chan struct{}), make(chan struct{})
	t.check()
	go t.run()
	return nil
}

// reserveHeadroom allocates min_headroom_mib that is never written. The collector counts it
// live, so the heap goal is at least twice it above the live heap (GOGC=100), and collections
// at a small live heap come that much less often; pages never written are never resident, so
// it costs address space, not memory. Allocated at Start, before the pipeline runs, it takes
// pages fresh from the system, which need no zeroing. A percent above GOGC would do the same on
// paper, but it would apply to whatever the next collection finds live: a flush's spike found
// at a high percent set for the quiet heap before it would overshoot by the spike times the
// percent.
func (t *tuner) reserveHeadroom() {
	t.reserve = make([]byte, min(t.cfg.MinHeadroomMiB, t.cfg.MaxHeadroomMiB)<<20)
}

// limitFromCgroup sets the Go memory limit to memory_limit_percentage of the cgroup's memory
// limit, when there is one.
func (t *tuner) limitFromCgroup() {
	cg, ok := t.readCgroup()
	if !ok {
		t.logger.Info("no cgroup memory limit found: the Go runtime has no memory limit (set GOMEMLIMIT for one)")
		return
	}
	t.baseLimit = cg / 100 * int64(t.cfg.MemoryLimitPercentage)
	t.setLimit(t.baseLimit)
	t.setBase = true
	t.logger.Info("Go memory limit set from the cgroup's memory limit",
		zap.Int64("cgroup_limit_bytes", cg), zap.Int("memory_limit_percentage", t.cfg.MemoryLimitPercentage),
		zap.Int64("memory_limit_bytes", t.baseLimit))
}

// readCgroupMemoryLimit reads the memory limit of the process' cgroup (cgroup.go).
func readCgroupMemoryLimit() (int64, bool) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	return cgroupMemoryLimit("/sys/fs/cgroup", self)
}

func (t *tuner) run() {
	defer close(t.done)
	tick := time.NewTicker(t.cfg.CheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
			t.check()
		}
	}
}

// check reads the live heap and sets the GC percent for it, and reads the off-heap bytes and
// sets the memory limit for them, each when it changes.
func (t *tuner) check() {
	if t.tunes {
		live := t.readLive()
		t.live.Store(int64(live))
		p := percentFor(live, uint64(t.cfg.MaxHeadroomMiB)<<20, t.cfg.MinGCPercent, t.base)
		if int64(p) != t.percent.Load() {
			t.setPercent(p)
			t.percent.Store(int64(p))
		}
	}
	if t.limits {
		off := t.readOffHeap()
		t.offHeap.Store(off)
		l := limitFor(t.baseLimit, off)
		if d := l - t.limit.Load(); d >= limitStep || d <= -limitStep || l == t.baseLimit && d != 0 {
			t.setLimit(l)
			t.limit.Store(l)
		}
	}
}

// limitStep is the least change of the memory limit worth setting: the off-heap bytes move
// by a few pages at every render.
const limitStep = 1 << 20

// limitFor is the Go memory limit that keeps the Go heap and the off bytes mapped outside it
// within base together: base less off, but not below a quarter of base, under which the
// runtime would collect all the time for memory it cannot free.
func limitFor(base, off int64) int64 {
	return max(base-off, base/4)
}

// percentFor is the GC percent that lets the heap grow by at most maxRoom bytes above live:
// base (GOGC) while base allows less, never above base, and never below minPercent unless
// base is lower still.
func percentFor(live, maxRoom uint64, minPercent, base int) int {
	if base <= 0 || live == 0 {
		return base
	}
	p := maxRoom / live * 100
	if p < uint64(base) {
		// In two steps: maxRoom*100 could overflow for an absurd headroom, maxRoom/live
		// alone loses the fraction.
		p = maxRoom * 100 / live
	}
	switch {
	case p >= uint64(base):
		return base
	case p < uint64(minPercent):
		return min(minPercent, base)
	}
	return int(p)
}

// Shutdown stops adjusting and puts back the GC percent and the memory limit found at Start (none,
// when Start set it from the cgroup's). It waits for the loop
// without a deadline: a check is a metrics read and at most one SetGCPercent and one
// SetMemoryLimit, so the loop ends at once, and the settings are put back only after its last
// check.
func (t *tuner) Shutdown(context.Context) error {
	t.tel.shutdown()
	if !t.owns {
		return nil
	}
	if t.stop != nil {
		close(t.stop)
		<-t.done
	}
	t.setPercent(t.base)
	t.reserve = nil
	if t.limits || t.setBase {
		t.setLimit(t.found)
	}
	t.setBase = false
	t.owns = false
	running.Store(false)
	return nil
}
