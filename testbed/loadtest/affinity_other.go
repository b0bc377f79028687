//go:build !linux

package loadtest

import (
	"errors"
	"os/exec"
)

var errNoAffinity = errors.New("CPU affinity is only set on Linux")

func splitCPUs(int) (cpuSplit, bool) { return cpuSplit{}, false }

func startOnCPUs(*exec.Cmd, []int) error { return errNoAffinity }

func bindProcess([]int) (func(), error) { return nil, errNoAffinity }

func cpusOf(int) ([]int, error) { return nil, errNoAffinity }
