//go:build !linux

package harness

import (
	"errors"
	"os/exec"
)

var errNoAffinity = errors.New("CPU affinity is only set on Linux")

// SplitCPUs leaves every CPU shared outside Linux.
func SplitCPUs(int) (CPUSplit, bool) { return CPUSplit{}, false }

func startOnCPUs(*exec.Cmd, []int) error { return errNoAffinity }

// BindProcess cannot bind outside Linux.
func BindProcess([]int) (func(), error) { return nil, errNoAffinity }

func cpusOf(int) ([]int, error) { return nil, errNoAffinity }
