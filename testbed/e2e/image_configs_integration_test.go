//go:build integration

package e2e

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/internal/testservice"
)

// The image's contract, checked on the image `make image` builds: every config of configs/ is in
// it, documented in README.md and valid for the binary with the image's environment, and every
// directory a shipped config writes to exists in the image owned by 10001 under a VOLUME, since
// nothing on a scratch base can create one at run time.

// imageUser is the user the image runs as.
const imageUser = "10001"

// configDirs returns the default directories a config writes to (`directory:` keys, with the
// ${env:VAR:-default} the image runs with when VAR is unset).
func configDirs(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	re := regexp.MustCompile(`(?m)^\s*directory:\s*(\S+)\s*$`)
	envRe := regexp.MustCompile(`^\$\{env:[A-Z0-9_]+:-(.+)\}$`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		v := strings.Trim(m[1], `"'`)
		if e := envRe.FindStringSubmatch(v); e != nil {
			v = e[1]
		}
		require.True(t, path.IsAbs(v), "%s: directory %q has no absolute default the image could hold", file, m[1])
		out = append(out, path.Clean(v))
	}
	return out
}

// overlayBase returns the config that the head comment of config path says it is merged over
// ("Merged over configs/agent.yaml"), or "" for a config that runs alone.
func overlayBase(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "#") {
			return ""
		}
		if _, rest, ok := strings.Cut(line, "Merged over configs/"); ok {
			base, _, _ := strings.Cut(rest, " ")
			return base
		}
	}
	return ""
}

// TestImageRunsEveryConfig checks the built image against every file in configs/.
func TestImageRunsEveryConfig(t *testing.T) {
	root := testservice.Root()
	assert.Equal(t, imageUser, imageCmd(t, "image", "inspect", "--format", "{{.Config.User}}", imageName), "the image's user")
	var volumes []string
	var volumeSet map[string]struct{}
	require.NoError(t, json.Unmarshal([]byte(imageCmd(t, "image", "inspect", "--format", "{{json .Config.Volumes}}", imageName)), &volumeSet))
	for v := range volumeSet {
		volumes = append(volumes, v)
	}
	require.NotEmpty(t, volumes, "the image declares no VOLUME")

	// The image's file tree, read-only, for ownership: what `podman image mount` shows.
	rootfs := imageCmd(t, "image", "mount", imageName)
	t.Cleanup(func() { _, _ = testservice.Run("image", "image", "unmount", imageName) })

	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "\n## Docker image\n")
	require.True(t, ok, `README.md has no "## Docker image" section`)
	section, _, _ = strings.Cut(section, "\n## ")

	configs, err := filepath.Glob(filepath.Join(root, "configs", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, configs)
	for _, c := range configs {
		name := filepath.Base(c)
		t.Run(name, func(t *testing.T) {
			assert.Contains(t, section, "/etc/otelcol-red/"+name, "the README's Docker section shows how to run it")
			inImage, err := os.ReadFile(filepath.Join(rootfs, "etc", "otelcol-red", name))
			require.NoError(t, err, "the image holds /etc/otelcol-red/%s", name)
			want, err := os.ReadFile(c)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(inImage), "the image's copy is the repository's (rebuild with make image)")
			for _, d := range configDirs(t, c) {
				fi, err := os.Stat(filepath.Join(rootfs, d))
				if assert.NoError(t, err, "%s writes to %s, which the image does not hold", name, d) {
					st := fi.Sys().(*syscall.Stat_t)
					assert.Equal(t, imageUser, strconv.Itoa(int(st.Uid)), "%s writes to %s, which must be owned by %s", name, d, imageUser)
				}
				inVolume := false
				for _, v := range volumes {
					if d == v || strings.HasPrefix(d, strings.TrimSuffix(v, "/")+"/") {
						inVolume = true
					}
				}
				assert.True(t, inVolume, "%s writes to %s, outside every VOLUME %v: its data would die with the container", name, d, volumes)
			}
			args := []string{"run", "--rm", imageName, "validate", "--config=/etc/otelcol-red/" + name}
			// An overlay ("Merged over configs/<base>.yaml" at its head) runs after its base.
			if base := overlayBase(t, c); base != "" {
				args = []string{"run", "--rm", imageName, "validate", "--config=/etc/otelcol-red/" + base, "--config=/etc/otelcol-red/" + name}
				assert.Contains(t, section, "/etc/otelcol-red/"+base+" --config=/etc/otelcol-red/"+name, "the README's Docker section runs the overlay after its base")
			}
			out, err := testservice.Run("image", args...)
			assert.NoError(t, err, "validate %s in the image, with its environment:\n%s", name, out)
		})
	}
}
