package solo

import (
	"bufio"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const procStat = `cpu  185505 0 20799 190564 1668 0 2646 3809 7 0
cpu0 81449 0 10063 107447 199 0 1329 2041 7 0
cpu1 104056 0 10736 83117 1469 0 1317 1768 0 0
intr 1 2 3
ctxt 4
`

func TestParseCPUClock(t *testing.T) {
	read := func(cpus []int) (cpuClock, bool) {
		return parseCPUClock(bufio.NewScanner(strings.NewReader(procStat)), cpus)
	}
	c, ok := read(nil)
	require.True(t, ok)
	// Guest time (the ninth and tenth numbers) is already in user and nice.
	assert.Equal(t, cpuClock{steal: 3809, total: 185505 + 20799 + 190564 + 1668 + 2646 + 3809}, c)

	c, ok = read([]int{1})
	require.True(t, ok)
	assert.Equal(t, cpuClock{steal: 1768, total: 104056 + 10736 + 83117 + 1469 + 1317 + 1768}, c)

	c, ok = read([]int{0, 1})
	require.True(t, ok)
	assert.Equal(t, uint64(2041+1768), c.steal)

	_, ok = read([]int{2})
	assert.False(t, ok, "a CPU /proc/stat does not list")
	_, ok = parseCPUClock(bufio.NewScanner(strings.NewReader("cpu  1 2 3 4\n")), nil)
	assert.False(t, ok, "a kernel without the steal column")
	_, ok = parseCPUClock(bufio.NewScanner(strings.NewReader("cpu  1 2 3 4 5 6 7 x\n")), nil)
	assert.False(t, ok)
}

func TestStealMeter(t *testing.T) {
	if runtime.GOOS != "linux" {
		_, ok := readCPUClock(nil)
		assert.False(t, ok)
		return
	}
	m := StartSteal([]int{0})
	require.True(t, m.ok)
	// Let the clock advance by at least a tick.
	for c, _ := readCPUClock([]int{0}); ; {
		now, _ := readCPUClock([]int{0})
		if now.total > c.total {
			break
		}
		runtime.Gosched()
	}
	p := m.Percent()
	require.NotNil(t, p)
	assert.GreaterOrEqual(t, *p, 0.0)
	assert.LessOrEqual(t, *p, 100.0)

	assert.Nil(t, StealMeter{cpus: []int{0}}.Percent(), "a start that could not be read")
	assert.Nil(t, StartSteal([]int{1 << 20}).Percent(), "a CPU the host does not have")
}

func TestStealText(t *testing.T) {
	five := 5.04
	assert.Equal(t, "-", StealText(nil))
	assert.Equal(t, "5.0", StealText(&five))
}
