//go:build integration

package e2e

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/internal/testservice"
)

// No Docker engine is needed here: the image's contract is checked from the Dockerfile itself and
// the built binary. The image runs as user 10001 on scratch, where nothing can create a directory
// at run time that the image does not already hold; so every directory a shipped config writes to
// must be made in the Dockerfile, owned by 10001, under a VOLUME, and every shipped config must
// be in the image, documented in README.md and valid for the binary with the image's environment.

// imageUser is the user the image runs as.
const imageUser = "10001"

// dockerStage is one FROM section of a Dockerfile: its name and instructions in order, each with
// its continuation lines joined.
type dockerStage struct {
	base, name string
	steps      []dockerStep
}

type dockerStep struct {
	op   string // upper case: RUN, COPY, ...
	args string
}

// parseDockerfile splits a Dockerfile into stages. It understands what this repository's
// Dockerfile uses: comments, `\` continuations, `FROM base AS name`.
func parseDockerfile(t *testing.T, text string) []dockerStage {
	t.Helper()
	var stages []dockerStage
	var line strings.Builder
	flush := func() {
		l := strings.TrimSpace(line.String())
		line.Reset()
		if l == "" {
			return
		}
		op, args, _ := strings.Cut(l, " ")
		op = strings.ToUpper(op)
		args = strings.TrimSpace(args)
		if op == "FROM" {
			f := strings.Fields(args)
			st := dockerStage{base: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			}
			stages = append(stages, st)
			return
		}
		require.NotEmpty(t, stages, "instruction %s before FROM", op)
		stages[len(stages)-1].steps = append(stages[len(stages)-1].steps, dockerStep{op, args})
	}
	for _, raw := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(raw)
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(trimmed, "\\"); ok {
			line.WriteString(cont + " ")
			continue
		}
		line.WriteString(trimmed)
		flush()
	}
	flush()
	return stages
}

func (s dockerStage) args(op string) []string {
	var out []string
	for _, st := range s.steps {
		if st.op == op {
			out = append(out, st.args)
		}
	}
	return out
}

// jsonOrWords reads the arguments of VOLUME / ENTRYPOINT in either form.
func jsonOrWords(s string) []string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") {
		var out []string
		for _, m := range regexp.MustCompile(`"([^"]*)"`).FindAllStringSubmatch(s, -1) {
			out = append(out, m[1])
		}
		return out
	}
	return strings.Fields(s)
}

// imageDirs returns the directories the final stage receives owned by imageUser: a COPY
// --from=<stage> --chown=10001:... of a tree that <stage> creates with mkdir -p and chowns to
// 10001. Paths are as seen in the final image.
func imageDirs(t *testing.T, stages []dockerStage) map[string]bool {
	t.Helper()
	final := stages[len(stages)-1]
	byName := map[string]dockerStage{}
	for _, s := range stages {
		byName[s.name] = s
	}
	owned := map[string]bool{}
	copyRe := regexp.MustCompile(`^--from=(\S+)\s+--chown=` + imageUser + `(?::\S+)?\s+(\S+)\s+(\S+)$`)
	for _, a := range final.args("COPY") {
		m := copyRe.FindStringSubmatch(a)
		if m == nil {
			continue
		}
		from, src, dst := byName[m[1]], path.Clean(m[2]), path.Clean(m[3])
		chowned := false
		var made []string
		for _, run := range from.args("RUN") {
			for _, cmd := range strings.Split(run, "&&") {
				f := strings.Fields(cmd)
				switch {
				case len(f) >= 3 && f[0] == "mkdir" && f[1] == "-p":
					made = append(made, f[2:]...)
				case len(f) == 4 && f[0] == "chown" && f[1] == "-R" && strings.HasPrefix(f[2], imageUser+":") && path.Clean(f[3]) == src:
					chowned = true
				}
			}
		}
		require.True(t, chowned, "stage %s must chown -R %s %s", m[1], imageUser, src)
		for _, d := range made {
			d = path.Clean(d)
			for p := d; strings.HasPrefix(p, src); p = path.Dir(p) {
				// mkdir -p makes every parent; the chown -R above makes them 10001's.
				owned[dst+strings.TrimPrefix(p, src)] = true
				if p == src {
					break
				}
			}
		}
	}
	return owned
}

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

// TestDockerImageRunsEveryConfig checks the Dockerfile against every file in configs/.
func TestDockerImageRunsEveryConfig(t *testing.T) {
	root := testservice.Root()
	df, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	stages := parseDockerfile(t, string(df))
	require.NotEmpty(t, stages)
	final := stages[len(stages)-1]
	require.Equal(t, "scratch", final.base, "final stage")
	require.Equal(t, []string{imageUser}, final.args("USER"), "the image's user")
	require.Contains(t, final.args("COPY"), "configs/ /etc/otelcol-red/", "every config in the image")

	var volumes []string
	for _, v := range final.args("VOLUME") {
		volumes = append(volumes, jsonOrWords(v)...)
	}
	owned := imageDirs(t, stages)
	env := map[string]string{}
	for _, e := range final.args("ENV") {
		for _, kv := range strings.Fields(e) {
			k, v, ok := strings.Cut(kv, "=")
			require.True(t, ok, "ENV %q: use the key=value form", kv)
			env[k] = v
		}
	}

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
			for _, d := range configDirs(t, c) {
				assert.True(t, owned[d], "%s writes to %s, which the image does not hold owned by %s (has %v)", name, d, imageUser, owned)
				inVolume := false
				for _, v := range volumes {
					if d == v || strings.HasPrefix(d, strings.TrimSuffix(v, "/")+"/") {
						inVolume = true
					}
				}
				assert.True(t, inVolume, "%s writes to %s, outside every VOLUME %v: its data would die with the container", name, d, volumes)
			}
			args := []string{"validate", "--config=" + c}
			// An overlay ("Merged over configs/<base>.yaml" at its head) runs after its base.
			if base := overlayBase(t, c); base != "" {
				args = []string{"validate", "--config=" + filepath.Join(root, "configs", base), "--config=" + c}
				assert.Contains(t, section, "/etc/otelcol-red/"+base+" --config=/etc/otelcol-red/"+name, "the README's Docker section runs the overlay after its base")
			}
			cmd := exec.Command(binaryPath(t), args...)
			cmd.Env = os.Environ()
			for k, v := range env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			out, err := cmd.CombinedOutput()
			assert.NoError(t, err, "validate %s with the image's environment:\n%s", name, tailOf(string(out), 2000))
		})
	}
}
