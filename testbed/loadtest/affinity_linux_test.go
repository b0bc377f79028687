//go:build linux

package loadtest

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestStartOnCPUBindsTheChildNotTheTestbed(t *testing.T) {
	before, err := cpusOf(0)
	require.NoError(t, err)
	cpu := before[len(before)-1]
	cmd := exec.Command("sleep", "30")
	require.NoError(t, startOnCPU(cmd, cpu))
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	got, err := cpusOf(cmd.Process.Pid)
	require.NoError(t, err)
	require.Equal(t, []int{cpu}, got)
	after, err := cpusOf(0)
	require.NoError(t, err)
	require.Equal(t, before, after, "the forking thread got its CPUs back")
}

func TestBindProcessBindsEveryThreadAndRestores(t *testing.T) {
	all, err := cpusOf(0)
	require.NoError(t, err)
	want := all[:1]
	restore, err := bindProcess(want)
	require.NoError(t, err)
	n, err := eachThread(func(tid int) error {
		var set unix.CPUSet
		require.NoError(t, unix.SchedGetaffinity(tid, &set))
		require.Equal(t, want, cpuList(&set), "thread %d", tid)
		return nil
	})
	require.NoError(t, err)
	require.Positive(t, n)

	restore()
	_, err = eachThread(func(tid int) error {
		var set unix.CPUSet
		require.NoError(t, unix.SchedGetaffinity(tid, &set))
		require.Equal(t, all, cpuList(&set), "thread %d", tid)
		return nil
	})
	require.NoError(t, err)
}

func TestSplitCPUsLeavesTheTestbedTheRest(t *testing.T) {
	all, err := cpusOf(0)
	require.NoError(t, err)
	split, ok := splitCPUs()
	if len(all) < 2 {
		require.False(t, ok)
		return
	}
	require.True(t, ok)
	require.Equal(t, all[len(all)-1], split.collector)
	require.Equal(t, all[:len(all)-1], split.testbed)
}
