package hotspotfilter

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTakeFollowsTokenBucket(t *testing.T) {
	const interval = int64(100 * time.Millisecond) // 10 per second
	const burst = 3
	tolerance := (burst - 1) * interval
	var e serviceEntry
	now := int64(5 * time.Second)

	for i := 0; i < burst; i++ {
		require.True(t, e.take(now, interval, tolerance), "burst span %d", i)
	}
	assert.False(t, e.take(now, interval, tolerance), "bucket empty")
	assert.False(t, e.take(now+interval-1, interval, tolerance), "not refilled yet")
	assert.True(t, e.take(now+interval, interval, tolerance), "one refilled")
	assert.False(t, e.take(now+interval, interval, tolerance))

	// A long pause refills the bucket to burst, not beyond.
	later := now + int64(time.Hour)
	n := 0
	for e.take(later, interval, tolerance) {
		n++
	}
	assert.Equal(t, burst, n)
}

func TestTakeWithoutBudget(t *testing.T) {
	var e serviceEntry
	assert.False(t, e.take(0, 0, 0))
	assert.False(t, e.take(int64(time.Hour), 0, 0))
}

// Concurrent takers at one instant must get exactly the burst: a lost update
// (two takers reading the same state) would hand out more.
func TestTakeIsExactUnderContention(t *testing.T) {
	const burst, takers = 200_000, 8
	const interval = int64(time.Second)
	var e serviceEntry
	var granted atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < takers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine int64
			for i := 0; i < burst/takers*2; i++ {
				if e.take(1, interval, (burst-1)*interval) {
					mine++
				}
			}
			granted.Add(mine)
		}()
	}
	wg.Wait()
	assert.EqualValues(t, burst, granted.Load())
}

func TestServiceTableCapIsExactUnderContention(t *testing.T) {
	const maxServices = 500
	table := newServiceTable(maxServices, 0)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				table.get(string(rune('a'+g))+string(rune(i)), 1, 1)
			}
		}(g)
	}
	wg.Wait()
	assert.EqualValues(t, maxServices, table.size.Load())
	entries := table.collect(nil, 0)
	assert.Len(t, entries, maxServices+1, "tracked services plus the overflow entry")
	assert.True(t, entries[len(entries)-1].overflow)
}

func TestServiceTableReturnsSameEntry(t *testing.T) {
	table := newServiceTable(10, 0)
	// The service name of a span points into the batch's memory, which is
	// reused after the call: the table must keep a copy.
	name := []byte("cart")
	a := table.get(unsafe.String(&name[0], len(name)), 1, 1)
	name[0] = 'x'
	b := table.get("cart", 2, 2)
	assert.Same(t, a, b)
	assert.Equal(t, "cart", a.service)
	assert.EqualValues(t, 2, a.lastSeen)
}
