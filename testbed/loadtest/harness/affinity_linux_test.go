//go:build linux

package harness

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
	require.NoError(t, startOnCPUs(cmd, []int{cpu}))
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
	restore, err := BindProcess(want)
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
	for n := 1; n <= len(all); n++ {
		split, ok := SplitCPUs(n)
		if len(all) < n+1 {
			require.False(t, ok, "%d CPUs for the collector leave none to the testbed", n)
			continue
		}
		require.True(t, ok)
		require.Equal(t, all[len(all)-n:], split.Collector)
		require.Equal(t, all[:len(all)-n], split.Testbed)
	}
	_, ok := SplitCPUs(0)
	require.False(t, ok)
}

func TestStartOnCPUsBindsTheChildToTheSet(t *testing.T) {
	all, err := cpusOf(0)
	require.NoError(t, err)
	want := all[max(len(all)-2, 0):]
	cmd := exec.Command("sleep", "30")
	require.NoError(t, startOnCPUs(cmd, want))
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	got, err := cpusOf(cmd.Process.Pid)
	require.NoError(t, err)
	require.Equal(t, want, got)
}
