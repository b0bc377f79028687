package gcheadroom

import (
	"context"
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

// fakeRuntime stands for the live heap and debug.SetGCPercent.
type fakeRuntime struct {
	mu      sync.Mutex
	percent int
	sets    []int
	live    atomic.Uint64
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
	require.Eventually(t, func() bool { return rt.get() == 25 }, 5*time.Second, 5*time.Millisecond, "1 GiB live: 256 MiB is 25%%")
	rt.live.Store(512 * mib)
	require.Eventually(t, func() bool { return rt.get() == 50 }, 5*time.Second, 5*time.Millisecond)
	assert.EqualValues(t, 50, tu.percent.Load())
	assert.EqualValues(t, 512*mib, tu.live.Load())
	rt.live.Store(128 * mib)
	require.Eventually(t, func() bool { return rt.get() == 100 }, 5*time.Second, 5*time.Millisecond, "back to GOGC when the heap shrinks")

	rt.live.Store(2048 * mib)
	require.Eventually(t, func() bool { return rt.get() == 25 }, 5*time.Second, 5*time.Millisecond)
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
	assert.EqualValues(t, before, tu.percent.Load(), "a test binary's heap is far below 256 MiB")
	require.NoError(t, ext.Shutdown(context.Background()))
	after := debug.SetGCPercent(before)
	assert.Equal(t, before, after)
}

// TestCheckAllocatesNothing: a check reads runtime/metrics into the sample it keeps and sets
// nothing while the percent stays the same.
func TestCheckAllocatesNothing(t *testing.T) {
	rt := &fakeRuntime{percent: 100}
	tu := newTestTuner(t, rt, createDefaultConfig())
	tu.readLive = newLiveHeapReader()
	tu.base = 100
	tu.percent.Store(100)
	allocs := testing.AllocsPerRun(1000, tu.check)
	assert.Zero(t, allocs, "allocations per check")
}
