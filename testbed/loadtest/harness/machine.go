package harness

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Machine describes where a run happened; the reports print it next to every number.
type Machine struct {
	CPUs     int     `json:"cpus"`
	CPUModel string  `json:"cpu_model"`
	MemGiB   float64 `json:"mem_gib"`
	OS       string  `json:"os"`
}

// ReadMachine reads the host description (Linux /proc; elsewhere only what Go knows).
func ReadMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if v, ok := procField("/proc/cpuinfo", "model name"); ok {
		m.CPUModel = v
	}
	if v, ok := procField("/proc/meminfo", "MemTotal"); ok {
		if kb, err := strconv.ParseFloat(strings.Fields(v)[0], 64); err == nil {
			m.MemGiB = kb / (1 << 20)
		}
	}
	return m
}

// Model is the CPU model, or "model unknown" where the host did not say.
func (m Machine) Model() string {
	if m.CPUModel == "" {
		return "model unknown"
	}
	return m.CPUModel
}

// String is the machine as the probes' reports write it: "2 CPUs (model), 7.8 GiB, linux/amd64".
func (m Machine) String() string {
	return fmt.Sprintf("%d CPUs (%s), %.1f GiB, %s", m.CPUs, m.Model(), m.MemGiB, m.OS)
}

// LoadAverage returns the 1-minute load average, or -1 where it cannot be read.
func LoadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

func procField(path, key string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}
