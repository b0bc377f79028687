//go:build integration

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/otelcol-red/otelcol-red/internal/testservice"
)

// A user moving to otelcol-red brings configs written for the stock components of the release we
// build. TestStockReadmeExamplesValidate takes every YAML example of the README of every stock
// component module the binary links (read from the module cache at the version the binary
// reports), completes it into a config of its own when it is a fragment, and runs `validate` with
// bin/otelcol-red and with the stock twin of the same release: ours must accept every example
// the stock twin accepts. (An example that neither accepts is written for another setting:
// placeholders, a missing companion component; the test lists them and their errors.)

// builtComponent is one entry of `otelcol-red components`.
type builtComponent struct {
	Name      string            `yaml:"name"`
	Module    string            `yaml:"module"`
	Stability map[string]string `yaml:"stability"`
}

type builtComponents struct {
	Receivers  []builtComponent `yaml:"receivers"`
	Processors []builtComponent `yaml:"processors"`
	Exporters  []builtComponent `yaml:"exporters"`
	Connectors []builtComponent `yaml:"connectors"`
	Extensions []builtComponent `yaml:"extensions"`
}

// componentKinds are the config sections of components, in the order a config lists them.
var componentKinds = []string{"receivers", "processors", "exporters", "connectors", "extensions"}

func listComponents(t *testing.T, bin string) (builtComponents, map[string]map[string]builtComponent) {
	t.Helper()
	out, err := exec.Command(bin, "components").Output()
	require.NoError(t, err)
	var bc builtComponents
	require.NoError(t, yaml.Unmarshal(out, &bc))
	byKind := map[string]map[string]builtComponent{}
	for kind, list := range map[string][]builtComponent{"receivers": bc.Receivers, "processors": bc.Processors, "exporters": bc.Exporters, "connectors": bc.Connectors, "extensions": bc.Extensions} {
		byKind[kind] = map[string]builtComponent{}
		for _, c := range list {
			byKind[kind][c.Name] = c
		}
	}
	return bc, byKind
}

// yamlBlocks returns the fenced ```yaml blocks of a markdown file.
func yamlBlocks(md string) []string {
	re := regexp.MustCompile("(?ms)^\\s*```ya?ml\\s*\\n(.*?)^\\s*```")
	var out []string
	for _, m := range re.FindAllStringSubmatch(md, -1) {
		out = append(out, m[1])
	}
	return out
}

// signalOf picks the signal a pipeline for a component of the given stability map uses.
func signalOf(stability map[string]string) string {
	for _, s := range []string{"traces", "metrics", "logs"} {
		if v, ok := stability[s]; ok && v != "Undefined" {
			return s
		}
	}
	return ""
}

// completeExample turns an example into a config validate can judge: an example without a
// service section gets one pipeline per component it declares (fed by, or feeding, components
// added for the purpose), so that every component it declares is built and validated.
func completeExample(example map[string]any, byKind map[string]map[string]builtComponent) (map[string]any, bool) {
	cfg := map[string]any{}
	for _, k := range componentKinds {
		if v, ok := example[k].(map[string]any); ok {
			cfg[k] = v
		}
	}
	if len(cfg) == 0 {
		return nil, false
	}
	section := func(k string) map[string]any {
		m, ok := cfg[k].(map[string]any)
		if !ok {
			m = map[string]any{}
			cfg[k] = m
		}
		return m
	}
	const feeder, sink = "otlp/example-feeder", "debug/example-sink"
	if svc, ok := example["service"].(map[string]any); ok {
		// The example's own service section, as written; one that lists no pipeline (an
		// extension's example) gets one, since a collector refuses to run without.
		cfg["service"] = svc
		if p, ok := svc["pipelines"].(map[string]any); !ok || len(p) == 0 {
			section("receivers")[feeder] = map[string]any{"protocols": map[string]any{"grpc": map[string]any{"endpoint": "127.0.0.1:0"}}}
			section("exporters")[sink] = map[string]any{}
			svc["pipelines"] = map[string]any{"traces/example": map[string]any{"receivers": []string{feeder}, "exporters": []string{sink}}}
		}
		return cfg, true
	}
	section("receivers")[feeder] = map[string]any{"protocols": map[string]any{"grpc": map[string]any{"endpoint": "127.0.0.1:0"}}}
	section("exporters")[sink] = map[string]any{}
	pipelines := map[string]any{}
	var extensions []string
	add := func(signal, name string, p map[string]any) { pipelines[signal+"/"+name] = p }
	for _, kind := range componentKinds {
		m, _ := example[kind].(map[string]any)
		ids := make([]string, 0, len(m))
		for id := range m {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for i, id := range ids {
			typ, _, _ := strings.Cut(id, "/")
			c, ok := byKind[kind][typ]
			if !ok {
				return nil, false // not built in: nothing to compare
			}
			name := fmt.Sprintf("%s-%d", kind, i)
			switch kind {
			case "extensions":
				extensions = append(extensions, id)
			case "receivers":
				add(signalOf(c.Stability), name, map[string]any{"receivers": []string{id}, "exporters": []string{sink}})
			case "processors":
				add(signalOf(c.Stability), name, map[string]any{"receivers": []string{feeder}, "processors": []string{id}, "exporters": []string{sink}})
			case "exporters":
				add(signalOf(c.Stability), name, map[string]any{"receivers": []string{feeder}, "exporters": []string{id}})
			case "connectors":
				pairs := make([]string, 0, len(c.Stability))
				for p := range c.Stability {
					pairs = append(pairs, p)
				}
				sort.Strings(pairs)
				from, to, ok := strings.Cut(pairs[0], "_to_")
				if !ok {
					return nil, false
				}
				add(from, name+"-in", map[string]any{"receivers": []string{feeder}, "exporters": []string{id}})
				add(to, name+"-out", map[string]any{"receivers": []string{id}, "exporters": []string{sink}})
			}
		}
	}
	if len(pipelines) == 0 {
		add("traces", "example", map[string]any{"receivers": []string{feeder}, "exporters": []string{sink}})
	}
	svc := map[string]any{"pipelines": pipelines}
	if len(extensions) > 0 {
		svc["extensions"] = extensions
	}
	cfg["service"] = svc
	return cfg, true
}

// validateConfig runs `bin validate` on a config file; it returns "" when valid, else the error.
func validateConfig(bin, file string) string {
	cmd := exec.Command(bin, "validate", "--config="+file)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return strings.TrimSpace(tailOf(out.String(), 400))
	}
	return ""
}

const contribModule = "github.com/open-telemetry/opentelemetry-collector-contrib"

// heldVersion reads the release a contrib module is held at from versions.txt.
func heldVersion(t *testing.T, module string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testservice.Root(), "versions.txt"))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "held" && f[1] == module {
			return f[2]
		}
	}
	t.Fatalf("versions.txt holds no %s", module)
	return ""
}

func TestStockReadmeExamplesValidate(t *testing.T) {
	ours := binaryPath(t)
	stock := filepath.Join(testservice.Root(), "bin", "otelcol-stock")
	_, err := os.Stat(stock)
	require.NoError(t, err, "the stock twin is missing: make stock-twin (make test builds it)")
	gomodcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)

	bc, byKind := listComponents(t, ours)
	type example struct {
		module, file string
	}
	var examples []example
	dir := t.TempDir()
	modules := 0
	for _, list := range [][]builtComponent{bc.Receivers, bc.Processors, bc.Exporters, bc.Connectors, bc.Extensions} {
		for _, c := range list {
			mod, version, _ := strings.Cut(c.Module, " ")
			if mod == "github.com/otelcol-red/otelcol-red/exporter/elasticsearch" {
				// contrib's exporter, wrapped (exporter/elasticsearch): its README is upstream's,
				// at the release it is held at.
				mod, version = contribModule+"/exporter/elasticsearchexporter", heldVersion(t, "exporter/elasticsearchexporter")
			} else if strings.HasPrefix(mod, "github.com/otelcol-red/") {
				continue // ours: tested by its own package
			}
			readme, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(gomodcache)), mod+"@"+version, "README.md"))
			require.NoError(t, err, "README of %s", c.Module)
			modules++
			for i, block := range yamlBlocks(string(readme)) {
				var parsed map[string]any
				if yaml.Unmarshal([]byte(block), &parsed) != nil {
					continue
				}
				cfg, ok := completeExample(parsed, byKind)
				if !ok {
					continue
				}
				b, err := yaml.Marshal(cfg)
				require.NoError(t, err)
				file := filepath.Join(dir, fmt.Sprintf("%s-%d.yaml", c.Name, i))
				require.NoError(t, os.WriteFile(file, b, 0o600))
				examples = append(examples, example{c.Module, file})
			}
		}
	}
	require.NotEmpty(t, examples)

	type verdict struct{ ours, stock string }
	verdicts := make([]verdict, len(examples))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, ex := range examples {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			verdicts[i] = verdict{validateConfig(ours, ex.file), validateConfig(stock, ex.file)}
		}()
	}
	wg.Wait()

	var bothOK, oursOnly, neither []string
	for i, v := range verdicts {
		name := filepath.Base(examples[i].file)
		switch {
		case v.ours == "" && v.stock == "":
			bothOK = append(bothOK, name)
		case v.ours == "":
			oursOnly = append(oursOnly, name+" (stock: "+v.stock+")")
		case v.stock == "":
			assert.Fail(t, "an example the stock twin accepts and ours refuses", "%s (%s): %s", name, examples[i].module, v.ours)
		default:
			neither = append(neither, name+": "+v.ours)
		}
	}
	slices.Sort(neither)
	t.Logf("%d README examples of %d stock component modules: %d valid for both, %d for ours only, %d for neither", len(examples), modules, len(bothOK), len(oursOnly), len(neither))
	for _, s := range oursOnly {
		t.Logf("ours only: %s", s)
	}
	for _, s := range neither {
		t.Logf("neither: %s", s)
	}
	assert.NotEmpty(t, bothOK)
}
