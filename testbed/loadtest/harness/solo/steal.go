package solo

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// cpuClock is what /proc/stat has counted for a set of CPUs since boot: the time a hypervisor
// ran other guests while these CPUs had work (steal) and all their time. On a shared virtual
// host a collector pinned to a CPU can lose part of it this way. Its own CPU % then falls as if it
// had waited for load, and its rate falls as if it were slower.
type cpuClock struct {
	steal, total uint64
}

// readCPUClock sums /proc/stat's lines of cpus (nil: the machine's "cpu" line). It returns false
// where /proc/stat cannot be read or lacks one of them (not Linux, a CPU gone offline).
func readCPUClock(cpus []int) (cpuClock, bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return cpuClock{}, false
	}
	defer f.Close()
	return parseCPUClock(bufio.NewScanner(f), cpus)
}

func parseCPUClock(sc *bufio.Scanner, cpus []int) (cpuClock, bool) {
	want := map[string]bool{"cpu": len(cpus) == 0}
	for _, c := range cpus {
		want["cpu"+strconv.Itoa(c)] = true
	}
	var c cpuClock
	found := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || !want[fields[0]] {
			continue
		}
		// user nice system idle iowait irq softirq steal guest guest_nice: guest time is
		// already in user and nice, so it is not added again.
		if len(fields) < 9 {
			return cpuClock{}, false
		}
		for i, v := range fields[1:min(len(fields), 9)] {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return cpuClock{}, false
			}
			c.total += n
			if i == 7 {
				c.steal += n
			}
		}
		found++
	}
	if sc.Err() != nil || found != max(len(cpus), 1) {
		return cpuClock{}, false
	}
	return c, true
}

// StealMeter measures the steal of a set of CPUs over a window.
type StealMeter struct {
	cpus  []int
	start cpuClock
	ok    bool
}

// StartSteal starts measuring the steal of cpus (nil: the host's).
func StartSteal(cpus []int) StealMeter {
	c, ok := readCPUClock(cpus)
	return StealMeter{cpus: cpus, start: c, ok: ok}
}

// Percent is the share of the CPUs' time stolen since the meter started, in percent; nil where
// it could not be read or no time passed.
func (m StealMeter) Percent() *float64 {
	end, ok := readCPUClock(m.cpus)
	if !m.ok || !ok || end.total <= m.start.total || end.steal < m.start.steal {
		return nil
	}
	p := 100 * float64(end.steal-m.start.steal) / float64(end.total-m.start.total)
	return &p
}

// StealText writes a steal percentage for a report: "-" where it was not measured.
func StealText(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', 1, 64)
}
