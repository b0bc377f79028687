// Package grafana holds the tests of the dashboard in this folder that need no Prometheus: its
// structure and its agreement with the recording rules. testbed/e2e's
// TestDashboardOnRealPrometheus runs every query on a real Prometheus.
package grafana

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"sigs.k8s.io/yaml"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type panel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource json.RawMessage `json:"datasource"`
	GridPos    struct{ H, W, X, Y int }
	Panels     []panel `json:"panels"`
	Targets    []struct {
		RefID      string          `json:"refId"`
		Expr       string          `json:"expr"`
		Datasource json.RawMessage `json:"datasource"`
		Format     string          `json:"format"`
		Instant    bool            `json:"instant"`
	} `json:"targets"`
	Transformations []struct {
		ID      string         `json:"id"`
		Options map[string]any `json:"options"`
	} `json:"transformations"`
	FieldConfig struct {
		Overrides []struct {
			Matcher struct {
				ID      string `json:"id"`
				Options string `json:"options"`
			} `json:"matcher"`
		} `json:"overrides"`
	} `json:"fieldConfig"`
}

type dashboard struct {
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

func load(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile("otelcol-red.json")
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(b, &d))
	return d
}

// recordedNames are the `record:` names of deploy/prometheus/rules.yaml.
func recordedNames(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "prometheus", "rules.yaml"))
	require.NoError(t, err)
	var f struct {
		Groups []struct {
			Rules []map[string]any `json:"rules"`
		} `json:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(b, &f))
	names := map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if n, ok := r["record"].(string); ok {
				names[n] = true
			}
		}
	}
	return names
}

// recordingRuleName matches level:metric:operations names, the only metric names with colons.
var recordingRuleName = regexp.MustCompile(`[a-zA-Z_][a-zA-Z0-9_]*:[a-zA-Z0-9_:]+`)

func TestDashboardStructure(t *testing.T) {
	d := load(t)
	assert.NotEmpty(t, d.UID)
	assert.GreaterOrEqual(t, d.SchemaVersion, 39, "schema of a current Grafana")
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	assert.Equal(t, map[string]string{"datasource": "datasource", "service": "query", "span_kind": "query"}, vars)

	ids := map[int]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if other, dup := ids[p.ID]; dup {
				t.Errorf("panel id %d used by %q and %q", p.ID, other, p.Title)
			}
			ids[p.ID] = p.Title
			assert.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, "%q fits the 24-column grid", p.Title)
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			assert.JSONEq(t, `{"type":"prometheus","uid":"${datasource}"}`, string(p.Datasource), "%q uses the datasource variable", p.Title)
			require.NotEmpty(t, p.Targets, "%q has queries", p.Title)
			for _, tg := range p.Targets {
				assert.NotEmpty(t, tg.Expr, "%q %s", p.Title, tg.RefID)
				assert.JSONEq(t, string(p.Datasource), string(tg.Datasource), "%q %s datasource", p.Title, tg.RefID)
			}
		}
	}
	walk(d.Panels)
}

// TestDashboardUsesRecordedRules: every recorded series a panel or variable reads is produced by
// the rules, so the dashboard cannot drift from them unnoticed.
func TestDashboardUsesRecordedRules(t *testing.T) {
	d := load(t)
	recorded := recordedNames(t)
	require.NotEmpty(t, recorded)
	used := 0
	check := func(where, expr string) {
		for _, n := range recordingRuleName.FindAllString(expr, -1) {
			used++
			assert.True(t, recorded[n], "%s reads %s, which rules.yaml does not record", where, n)
		}
	}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, tg := range p.Targets {
				check(p.Title+" "+tg.RefID, tg.Expr)
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok {
			check("variable "+v.Name, q["query"].(string))
		}
	}
	assert.Greater(t, used, 5, "the RED panels read recorded aggregates")
}

// nativeForm rewrites a classic-histogram query into the same query over native histograms:
// the histogram is one series (no `_bucket` suffix, no `le` label), and its recorded rate drops
// `le` from the level of its name.
var nativeForm = strings.NewReplacer(
	"service_name_span_kind_le:traces_span_metrics_duration_milliseconds_bucket:", "service_name_span_kind:traces_span_metrics_duration_milliseconds:",
	"traces_span_metrics_duration_milliseconds_bucket", "traces_span_metrics_duration_milliseconds",
	", le)", ")",
)

// TestDashboardLatencyReadsBothHistogramForms: every latency query is `classic or native`, the
// native half the classic half rewritten (same quantile, grouping and filters), so the panels
// draw from a Prometheus storing either form and the two halves cannot drift apart.
func TestDashboardLatencyReadsBothHistogramForms(t *testing.T) {
	d := load(t)
	latency := 0
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, tg := range p.Targets {
				if !strings.Contains(tg.Expr, "traces_span_metrics_duration_milliseconds") {
					continue
				}
				latency++
				halves := strings.Split(tg.Expr, "\nor\n")
				require.Len(t, halves, 2, "%q %s is `classic\\nor\\nnative`: %s", p.Title, tg.RefID, tg.Expr)
				classic, native := halves[0], halves[1]
				assert.Contains(t, classic, "traces_span_metrics_duration_milliseconds_bucket", "%q %s classic half", p.Title, tg.RefID)
				assert.Contains(t, classic, ", le)", "%q %s classic half keeps le", p.Title, tg.RefID)
				assert.NotContains(t, native, "_bucket", "%q %s native half", p.Title, tg.RefID)
				assert.NotContains(t, native, "le)", "%q %s native half", p.Title, tg.RefID)
				assert.Equal(t, nativeForm.Replace(classic), native, "%q %s native half is the classic half's rewrite", p.Title, tg.RefID)
			}
		}
	}
	walk(d.Panels)
	assert.GreaterOrEqual(t, latency, 4, "p50, p95, p99 and p99 with exemplars")
}
