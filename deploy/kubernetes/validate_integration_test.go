//go:build integration

package kubernetes

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// podIP stands in for the downward API's status.podIP.
const podIP = "10.1.2.3"

// TestMountedConfigsValidate runs `bin/otelcol-red validate` on the configuration every container
// would load: its ConfigMap keys written where its --config arguments point, with the container's
// environment (downward-API fields filled in, $(VAR) references expanded as the kubelet does).
func TestMountedConfigsValidate(t *testing.T) {
	bin, err := filepath.Abs(filepath.Join("..", "..", "bin", "otelcol-red"))
	require.NoError(t, err)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: run `make build` first (make test does): %v", bin, err)
	}
	m := loadManifests(t)
	for _, w := range m.workloads() {
		for _, c := range w.pod.Spec.Containers {
			t.Run(w.name+"/"+c.Name, func(t *testing.T) {
				dir := t.TempDir()
				var args []string
				for _, a := range c.Args {
					if _, ok := strings.CutPrefix(a, "--config="); !ok {
						args = append(args, a)
					}
				}
				for arg, content := range mountedConfigFiles(t, m, w.pod.Spec, c) {
					p := filepath.Join(dir, filepath.Base(strings.TrimPrefix(arg, "--config=")))
					require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
				}
				// Keep the containers' --config order: later files are merged over earlier ones.
				for _, a := range c.Args {
					if p, ok := strings.CutPrefix(a, "--config="); ok {
						args = append(args, "--config="+filepath.Join(dir, filepath.Base(p)))
					}
				}
				cmd := exec.Command(bin, append([]string{"validate"}, args...)...)
				cmd.Env = append(os.Environ(), containerEnv(t, c)...)
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "otelcol-red validate %v:\n%s", args, out)
			})
		}
	}
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// containerEnv returns c's environment as KEY=value, the way the kubelet builds it.
func containerEnv(t *testing.T, c corev1.Container) []string {
	t.Helper()
	vals := map[string]string{}
	var out []string
	for _, e := range c.Env {
		v := e.Value
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP":
			v = podIP
		case e.ValueFrom != nil:
			t.Fatalf("%s: env %s: only status.podIP is filled in by this test", c.Name, e.Name)
		default:
			v = envRef.ReplaceAllStringFunc(v, func(ref string) string {
				name := envRef.FindStringSubmatch(ref)[1]
				if d, ok := vals[name]; ok {
					return d
				}
				return ref // the kubelet leaves unknown references as they are
			})
		}
		vals[e.Name] = v
		out = append(out, e.Name+"="+v)
	}
	return out
}
