package gcheadroom

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cgroupTree writes files (path → content) under a temporary root.
func cgroupTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	return root
}

func TestCgroupMemoryLimit(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name  string
		files map[string]string
		self  string
		want  int64 // 0: none
	}{
		{
			name: "v2: the pod's limit",
			files: map[string]string{
				"memory.max":                    "max\n",
				"kubepods/pod1/memory.max":      "1073741824\n",
				"kubepods/pod1/ctr/memory.max":  "max\n",
				"kubepods/pod1/ctr/cgroup.type": "domain\n",
			},
			self: "0::/kubepods/pod1/ctr\n",
			want: gib,
		},
		{
			name:  "v2: no limit anywhere",
			files: map[string]string{"memory.max": "max\n", "a/memory.max": "max\n"},
			self:  "0::/a\n",
		},
		{
			name:  "v2: a container's own namespace sees /, the file at the root",
			files: map[string]string{"memory.max": "536870912\n"},
			self:  "0::/\n",
			want:  gib / 2,
		},
		{
			name:  "v2: a host path the container cannot see falls back to the root",
			files: map[string]string{"memory.max": "536870912\n"},
			self:  "0::/system.slice/docker-abc.scope\n",
			want:  gib / 2,
		},
		{
			name: "v1 memory controller, the lowest of the path",
			files: map[string]string{
				"memory/memory.limit_in_bytes":       "9223372036854771712\n",
				"memory/a/memory.limit_in_bytes":     "2147483648\n",
				"memory/a/b/memory.limit_in_bytes":   "9223372036854771712\n",
				"memory/a/b/c/memory.limit_in_bytes": "3221225472\n",
			},
			self: "9:pids:/\n4:memory:/a/b/c\n0::/\n",
			want: 2 * gib,
		},
		{
			name:  "v1 without a limit, as on this kind of host",
			files: map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n", "memory/x/memory.limit_in_bytes": "9223372036854771712\n"},
			self:  "4:memory:/x\n0::/\n",
		},
		{
			name:  "v1 memory among other controllers",
			files: map[string]string{"memory/memory.limit_in_bytes": "268435456\n"},
			self:  "5:cpu,memory:/\n",
			want:  gib / 4,
		},
		{
			name:  "no cgroup file systems",
			files: map[string]string{},
			self:  "0::/\n",
		},
		{
			name:  "garbage is no limit",
			files: map[string]string{"memory.max": "lots\n"},
			self:  "0::/\nnot a line\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := cgroupMemoryLimit(cgroupTree(t, tc.files), []byte(tc.self))
			assert.Equal(t, tc.want != 0, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}
