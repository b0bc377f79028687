package gcheadroom

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/otelcol-red/otelcol-red/internal/offheap"
)

const mib = 1 << 20

func TestPercentFor(t *testing.T) {
	for _, tc := range []struct {
		name       string
		live       uint64
		headroom   uint64
		minPercent int
		base       int
		want       int
	}{
		{"nothing live yet: GOGC", 0, 256 * mib, 25, 100, 100},
		{"small heap: GOGC", 100 * mib, 256 * mib, 25, 100, 100},
		{"headroom reached exactly: GOGC", 256 * mib, 256 * mib, 25, 100, 100},
		{"large heap: headroom over live", 512 * mib, 256 * mib, 25, 100, 50},
		{"fraction rounds down", 800 * mib, 256 * mib, 25, 100, 32},
		{"huge heap: the floor", 4096 * mib, 256 * mib, 25, 100, 25},
		{"GOGC below the floor: GOGC", 4096 * mib, 256 * mib, 25, 10, 10},
		{"GOGC above 100 is the ceiling", 300 * mib, 256 * mib, 25, 200, 85},
		{"GOGC=off stays off", 4096 * mib, 256 * mib, 25, -1, -1},
		{"absurd headroom does not overflow", 1 * mib, 1 << 62, 25, 100, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, percentFor(tc.live, tc.headroom, tc.minPercent, tc.base))
		})
	}
}

// The least headroom applies while GOGC is not set in the environment; a GOGC set by hand is
// the ceiling, as without it.
func TestLeastHeadroomOnlyWithoutGOGCInTheEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  bool
		want int
	}{{"GOGC unset", false, 32 * mib}, {"GOGC set", true, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &fakeRuntime{percent: 100}
			tu := newTestTuner(t, rt, createDefaultConfig())
			tu.lookupEnv = func(k string) (string, bool) { return "100", tc.env && k == "GOGC" }
			require.NoError(t, tu.Start(context.Background(), componenttest.NewNopHost()))
			assert.Len(t, tu.reserve, tc.want)
			require.NoError(t, tu.Shutdown(context.Background()))
			assert.Nil(t, tu.reserve, "let go at Shutdown")
		})
	}
	cfg := createDefaultConfig()
	cfg.MinHeadroomMiB = 0
	tu := newTestTuner(t, &fakeRuntime{percent: 100}, cfg)
	require.NoError(t, tu.Start(context.Background(), componenttest.NewNopHost()))
	assert.Nil(t, tu.reserve, "min_headroom_mib: 0 reserves nothing")
	require.NoError(t, tu.Shutdown(context.Background()))
	cfg = createDefaultConfig()
	cfg.MaxHeadroomMiB = 16
	tu = newTestTuner(t, &fakeRuntime{percent: 100}, cfg)
	require.NoError(t, tu.Start(context.Background(), componenttest.NewNopHost()))
	assert.Len(t, tu.reserve, 16*mib, "never more than max_headroom_mib")
	require.NoError(t, tu.Shutdown(context.Background()))
}

// The reserved headroom is counted live by the collector but never written, so it is not
// resident: the process' RSS grows by far less than its size. That holds for memory the process
// has not used before, as at the collector's Start; heap pages freed earlier are zeroed when
// reused, which makes them resident. So the check runs in a fresh process (this test binary
// again), where earlier tests and -count runs have freed nothing.
func TestReservedHeadroomIsNotResident(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/statm")
	}
	if os.Getenv("GCHEADROOM_RESERVE_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReservedHeadroomIsNotResident$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "GCHEADROOM_RESERVE_CHILD=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "--- PASS: TestReservedHeadroomIsNotResident", "the check ran in the child")
		return
	}
	rss := func() int64 {
		b, err := os.ReadFile("/proc/self/statm")
		require.NoError(t, err)
		var size, resident int64
		_, err = fmt.Sscan(string(b), &size, &resident)
		require.NoError(t, err)
		return resident * int64(os.Getpagesize())
	}
	cfg := createDefaultConfig()
	cfg.MinHeadroomMiB = 64
	tu := newTestTuner(t, &fakeRuntime{percent: 100}, cfg)
	before := rss()
	tu.reserveHeadroom()
	runtime.GC()
	grew := rss() - before
	require.Len(t, tu.reserve, 64*mib)
	assert.Less(t, grew, int64(8*mib), "RSS grew by %d bytes for a 64 MiB reservation", grew)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	assert.GreaterOrEqual(t, ms.HeapAlloc, uint64(64*mib), "the collector counts it live")
	runtime.KeepAlive(tu.reserve)
}

// fakeRuntime stands for the live heap, debug.SetGCPercent, the off-heap bytes and
// debug.SetMemoryLimit (no limit unless a test sets one).
type fakeRuntime struct {
	mu        sync.Mutex
	percent   int
	sets      []int
	live      atomic.Uint64
	limit     int64
	limitSets []int64
	offHeap   atomic.Int64
}

func (f *fakeRuntime) setLimit(l int64) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.limit
	if l >= 0 {
		f.limit = l
		f.limitSets = append(f.limitSets, l)
	}
	return old
}

func (f *fakeRuntime) getLimit() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.limit
}

func (f *fakeRuntime) set(p int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.percent
	f.percent = p
	f.sets = append(f.sets, p)
	return old
}

func (f *fakeRuntime) get() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.percent
}

func newTestTuner(t *testing.T, rt *fakeRuntime, cfg *Config) *tuner {
	tu, err := newTuner(componenttest.NewNopTelemetrySettings(), cfg)
	require.NoError(t, err)
	tu.readLive = rt.live.Load
	tu.setPercent = rt.set
	tu.readOffHeap = rt.offHeap.Load
	tu.setLimit = rt.setLimit
	tu.lookupEnv = func(string) (string, bool) { return "", false }
	if rt.limit == 0 {
		rt.limit = math.MaxInt64
	}
	return tu
}

func TestTunerFollowsTheLiveHeapAndRestoresGOGC(t *testing.T) {
	rt := &fakeRuntime{percent: 100}
	rt.live.Store(64 * mib)
	cfg := createDefaultConfig()
	cfg.CheckInterval = 10 * time.Millisecond
	tu := newTestTuner(t, rt, cfg)
	require.NoError(t, tu.Start(context.Background(), componenttest.NewNopHost()))

	assert.Equal(t, 100, rt.get(), "a small heap keeps GOGC")
	rt.live.Store(1024 * mib)
	require.Eventually(t, func() bool { return rt.get() == 10 }, 5*time.Second, 5*time.Millisecond, "1 GiB live: 64 MiB is under the floor of 10%%")
	rt.live.Store(128 * mib)
	require.Eventually(t, func() bool { return rt.get() == 50 }, 5*time.Second, 5*time.Millisecond)
	assert.EqualValues(t, 50, tu.percent.Load())
	assert.EqualValues(t, 128*mib, tu.live.Load())
	rt.live.Store(64 * mib)
	require.Eventually(t, func() bool { return rt.get() == 100 }, 5*time.Second, 5*time.Millisecond, "back to GOGC when the heap shrinks")

	rt.live.Store(512 * mib)
	require.Eventually(t, func() bool { return rt.get() == 12 }, 5*time.Second, 5*time.Millisecond, "512 MiB live: 64 MiB is 12.5%%, above the floor")
	rt.live.Store(2048 * mib)
	require.Eventually(t, func() bool { return rt.get() == 10 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, tu.Shutdown(context.Background()))
	assert.Equal(t, 100, rt.get(), "GOGC as found at Start")

	rt.mu.Lock()
	sets := append([]int(nil), rt.sets...)
	rt.mu.Unlock()
	for i := 3; i < len(sets); i++ {
		assert.NotEqual(t, sets[i-1], sets[i], "a percent is set only when it changes: %v", sets)
	}
}

func TestGOGCOffIsLeftAlone(t *testing.T) {
	rt := &fakeRuntime{percent: -1}
	rt.live.Store(4096 * mib)
	tu := newTestTuner(t, rt, createDefaultConfig())
	require.NoError(t, tu.Start(context.Background(), componenttest.NewNopHost()))
	assert.Equal(t, -1, rt.get())
	require.NoError(t, tu.Shutdown(context.Background()))
	assert.Equal(t, -1, rt.get())
}

func TestOneTunerAtATime(t *testing.T) {
	a := newTestTuner(t, &fakeRuntime{percent: 100}, createDefaultConfig())
	b := newTestTuner(t, &fakeRuntime{percent: 100}, createDefaultConfig())
	require.NoError(t, a.Start(context.Background(), componenttest.NewNopHost()))
	err := b.Start(context.Background(), componenttest.NewNopHost())
	require.ErrorContains(t, err, "another gcheadroom extension is running")
	require.NoError(t, b.Shutdown(context.Background()))
	require.NoError(t, a.Shutdown(context.Background()))
	// With the first gone, another may start.
	require.NoError(t, b.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, b.Shutdown(context.Background()))
}

// TestOnTheRealRuntime runs the extension as the factory builds it: it must read a live heap
// and leave GOGC as it found it.
func TestOnTheRealRuntime(t *testing.T) {
	before := debug.SetGCPercent(100)
	debug.SetGCPercent(before)
	runtime.GC() // the live heap is known from the first collection on
	f := NewFactory()
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), f.CreateDefaultConfig())
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	tu := ext.(*tuner)
	assert.Positive(t, tu.live.Load(), "the live heap read through runtime/metrics")
	assert.EqualValues(t, before, tu.percent.Load(), "a test binary's heap is far below 64 MiB")
	require.NoError(t, ext.Shutdown(context.Background()))
	after := debug.SetGCPercent(before)
	assert.Equal(t, before, after)
}

// TestCheckAllocatesNothing: a check reads runtime/metrics into the sample it keeps and the
// off-heap counter, and sets nothing while the percent and the limit stay the same.
func TestCheckAllocatesNothing(t *testing.T) {
	rt := &fakeRuntime{percent: 100}
	tu := newTestTuner(t, rt, createDefaultConfig())
	tu.readLive = newLiveHeapReader()
	tu.readOffHeap = offheap.Bytes
	tu.base, tu.tunes = 100, true
	tu.percent.Store(100)
	tu.baseLimit, tu.limits = 1024*mib, true
	tu.limit.Store(1024 * mib)
	allocs := testing.AllocsPerRun(1000, tu.check)
	assert.Zero(t, allocs, "allocations per check")
}

func TestLimitFor(t *testing.T) {
	assert.EqualValues(t, 1024*mib, limitFor(1024*mib, 0))
	assert.EqualValues(t, 724*mib, limitFor(1024*mib, 300*mib))
	assert.EqualValues(t, 256*mib, limitFor(1024*mib, 900*mib), "never below a quarter")
	assert.EqualValues(t, 256*mib, limitFor(1024*mib, 4096*mib))
}

func TestMemoryLimitFollowsTheOffHeapBytesAndIsRestored(t *testing.T) {
	rt := &fakeRuntime{percent: 100, limit: 1024 * mib}
	cfg := createDefaultConfig()
	cfg.CheckInterval = 10 * time.Millisecond
	tu := newTestTuner(t, rt, cfg)
	require.NoError(t, tu.Start(context.Background(), componenttest.NewNopHost()))
	assert.EqualValues(t, 1024*mib, rt.getLimit(), "nothing off the heap yet")

	rt.offHeap.Store(300 * mib)
	require.Eventually(t, func() bool { return rt.getLimit() == 724*mib }, 5*time.Second, 5*time.Millisecond)
	assert.EqualValues(t, 300*mib, tu.offHeap.Load())
	assert.EqualValues(t, 724*mib, tu.limit.Load())
	rt.offHeap.Store(300*mib + 4096) // a page more: not worth a setting
	rt.offHeap.Store(900 * mib)
	require.Eventually(t, func() bool { return rt.getLimit() == 256*mib }, 5*time.Second, 5*time.Millisecond, "a quarter at least")
	rt.offHeap.Store(0)
	require.Eventually(t, func() bool { return rt.getLimit() == 1024*mib }, 5*time.Second, 5*time.Millisecond)
	rt.offHeap.Store(300 * mib)
	require.Eventually(t, func() bool { return rt.getLimit() == 724*mib }, 5*time.Second, 5*time.Millisecond)

	require.NoError(t, tu.Shutdown(context.Background()))
	assert.EqualValues(t, 1024*mib, rt.getLimit(), "GOMEMLIMIT as found at Start")
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, l := range rt.limitSets {
		assert.Contains(t, []int64{1024 * mib, 724 * mib, 256 * mib}, l, "only the limits the off-heap bytes asked for: %v", rt.limitSets)
	}
}

func TestNoMemoryLimitIsLeftAlone(t *testing.T) {
	rt := &fakeRuntime{percent: 100}
	rt.offHeap.Store(300 * mib)
	cfg := createDefaultConfig()
	cfg.CheckInterval = 10 * time.Millisecond
	tu := newTestTuner(t, rt, cfg)
	require.NoError(t, tu.Start(context.Background(), componenttest.NewNopHost()))
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, tu.Shutdown(context.Background()))
	assert.EqualValues(t, int64(math.MaxInt64), rt.getLimit())
	assert.Empty(t, rt.limitSets, "no limit was set")
}

func TestMemoryLimitAloneUnderGOGCOff(t *testing.T) {
	rt := &fakeRuntime{percent: -1, limit: 2048 * mib}
	rt.live.Store(4096 * mib)
	rt.offHeap.Store(512 * mib)
	cfg := createDefaultConfig()
	cfg.CheckInterval = 10 * time.Millisecond
	tu := newTestTuner(t, rt, cfg)
	require.NoError(t, tu.Start(context.Background(), componenttest.NewNopHost()))
	assert.EqualValues(t, 1536*mib, rt.getLimit(), "set at Start")
	assert.Equal(t, -1, rt.get(), "GOGC stays off")
	require.NoError(t, tu.Shutdown(context.Background()))
	assert.EqualValues(t, 2048*mib, rt.getLimit())
	assert.Equal(t, -1, rt.get())
}

func TestMemoryLimitCountsOffHeapOff(t *testing.T) {
	rt := &fakeRuntime{percent: 100, limit: 1024 * mib}
	rt.offHeap.Store(300 * mib)
	cfg := createDefaultConfig()
	cfg.MemoryLimitCountsOffHeap = false
	tu := newTestTuner(t, rt, cfg)
	require.NoError(t, tu.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, tu.Shutdown(context.Background()))
	assert.Empty(t, rt.limitSets)
}

// cgroupLimit stands for the cgroup's memory limit: lim bytes, or none when 0.
func cgroupLimit(lim int64) func() (int64, bool) {
	return func() (int64, bool) { return lim, lim > 0 }
}

func TestMemoryLimitFromTheCgroup(t *testing.T) {
	rt := &fakeRuntime{percent: 100}
	rt.offHeap.Store(100 * mib)
	cfg := createDefaultConfig()
	cfg.CheckInterval = 10 * time.Millisecond
	cfg.MemoryLimitPercentage = 90
	tu := newTestTuner(t, rt, cfg)
	tu.readCgroup = cgroupLimit(1000 * mib)
	require.NoError(t, tu.Start(context.Background(), componenttest.NewNopHost()))
	assert.EqualValues(t, 800*mib, rt.getLimit(), "90% of the cgroup's 1000 MiB, less 100 MiB off the heap")
	rt.offHeap.Store(0)
	require.Eventually(t, func() bool { return rt.getLimit() == 900*mib }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, tu.Shutdown(context.Background()))
	assert.EqualValues(t, int64(math.MaxInt64), rt.getLimit(), "no limit, as found at Start")

	// Without memory_limit_counts_off_heap: the cgroup's share alone, set once.
	rt = &fakeRuntime{percent: 100}
	rt.offHeap.Store(100 * mib)
	cfg.MemoryLimitCountsOffHeap = false
	tu = newTestTuner(t, rt, cfg)
	tu.readCgroup = cgroupLimit(1000 * mib)
	require.NoError(t, tu.Start(context.Background(), componenttest.NewNopHost()))
	assert.EqualValues(t, 900*mib, rt.getLimit())
	require.NoError(t, tu.Shutdown(context.Background()))
	assert.EqualValues(t, int64(math.MaxInt64), rt.getLimit())
}

func TestGOMEMLIMITWinsOverTheCgroup(t *testing.T) {
	rt := &fakeRuntime{percent: 100, limit: 2048 * mib}
	cfg := createDefaultConfig()
	cfg.MemoryLimitPercentage = 90
	tu := newTestTuner(t, rt, cfg)
	tu.readCgroup = func() (int64, bool) {
		t.Error("the cgroup is not read when GOMEMLIMIT is set")
		return 0, false
	}
	require.NoError(t, tu.Start(context.Background(), componenttest.NewNopHost()))
	assert.EqualValues(t, 2048*mib, rt.getLimit())
	require.NoError(t, tu.Shutdown(context.Background()))
	assert.EqualValues(t, 2048*mib, rt.getLimit())
}

func TestNoCgroupLimitLeavesNoLimit(t *testing.T) {
	rt := &fakeRuntime{percent: 100}
	cfg := createDefaultConfig()
	cfg.MemoryLimitPercentage = 90
	tu := newTestTuner(t, rt, cfg)
	tu.readCgroup = cgroupLimit(0)
	require.NoError(t, tu.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, tu.Shutdown(context.Background()))
	assert.EqualValues(t, int64(math.MaxInt64), rt.getLimit())
	assert.Empty(t, rt.limitSets)
}
