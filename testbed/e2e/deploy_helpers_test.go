//go:build integration

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/internal/testservice"
)

// dashboard is the part of a Grafana dashboard JSON the tests read: panels (rows included, with
// their collapsed children) and their Prometheus targets, and the template variables.
type dashboard struct {
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		RefID   string `json:"refId"`
		Expr    string `json:"expr"`
		Legend  string `json:"legendFormat"`
		Instant bool   `json:"instant"`
	} `json:"targets"`
}

// loadDashboard reads deploy/grafana/<name> and returns its query panels, rows flattened.
func loadDashboard(t *testing.T, name string) (dashboard, []panel) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testservice.Root(), "deploy", "grafana", name))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			out = append(out, p)
		}
	}
	walk(d.Panels)
	return d, out
}

// grafanaExpand replaces the dashboard variables in expr the way Grafana does for a Prometheus
// datasource: a multi-value variable becomes a regex alternative, "All" becomes allValue (.*).
func grafanaExpand(expr string, vars map[string]string, rateInterval string) string {
	r := []string{"$__rate_interval", rateInterval}
	// Longest names first so $span_kind is not read as $span followed by _kind.
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	for _, k := range names {
		r = append(r, "${"+k+"}", vars[k], "$"+k, vars[k])
	}
	return strings.NewReplacer(r...).Replace(expr)
}

// promSample is one series of an instant or range query result.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
	Values [][2]any          `json:"values"`
	// Histogram is a native histogram sample: [time, {count, sum, buckets}].
	Histogram []json.RawMessage `json:"histogram"`
}

func (s promSample) value() float64 { return parsePromValue(s.Value[1]) }

func parsePromValue(v any) float64 {
	str, _ := v.(string)
	f, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return 0
	}
	return f
}

// promAPI is a client of Prometheus' HTTP API.
type promAPI struct{ base string }

// startPrometheus starts the Prometheus of scripts/<script>.sh ("prometheus" for Debian's 2.42,
// "prometheus3") with config as its prometheus.yml, stopped when the test ends.
func startPrometheus(t *testing.T, script, config string) promAPI {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prometheus.yml")
	require.NoError(t, os.WriteFile(path, []byte(config), 0o600))
	t.Setenv("PROM_CONFIG", path)
	return promAPI{base: "http://" + testservice.Start(t, script)}
}

// scrapeTarget is the host:port of a /metrics URL, as a static_configs target.
func scrapeTarget(metricsURL string) string {
	return strings.TrimSuffix(strings.TrimPrefix(metricsURL, "http://"), "/metrics")
}

func (p promAPI) get(path string, params url.Values, out any) error {
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Get(p.base + path + "?" + params.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("%s: status %d: %s", path, resp.StatusCode, tailOf(string(b), 300))
	}
	if env.Status != "success" {
		return fmt.Errorf("%s %s: %s", path, params.Encode(), env.Error)
	}
	return json.Unmarshal(env.Data, out)
}

// query runs an instant query now and returns its vector (a scalar result is an error).
func (p promAPI) query(expr string) ([]promSample, error) {
	var data struct {
		ResultType string       `json:"resultType"`
		Result     []promSample `json:"result"`
	}
	if err := p.get("/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("%s: result type %s, want vector", expr, data.ResultType)
	}
	return data.Result, nil
}

// queryRange runs a range query and returns its matrix.
func (p promAPI) queryRange(expr string, start, end time.Time, step time.Duration) ([]promSample, error) {
	var data struct {
		Result []promSample `json:"result"`
	}
	params := url.Values{
		"query": {expr},
		"start": {strconv.FormatInt(start.Unix(), 10)},
		"end":   {strconv.FormatInt(end.Unix(), 10)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}
	err := p.get("/api/v1/query_range", params, &data)
	return data.Result, err
}

// labelValues returns the values of label among the series matching match, as Grafana's
// label_values(match, label) variable query does.
func (p promAPI) labelValues(match, label string) ([]string, error) {
	var vals []string
	err := p.get("/api/v1/label/"+label+"/values", url.Values{"match[]": {match}}, &vals)
	return vals, err
}

// legend renders a Grafana legendFormat ("{{service_name}} p99") for a series.
func legend(format string, m map[string]string) string {
	out := format
	for k, v := range m {
		out = strings.ReplaceAll(out, "{{"+k+"}}", v)
	}
	for strings.Contains(out, "{{") {
		i := strings.Index(out, "{{")
		j := strings.Index(out[i:], "}}")
		if j < 0 {
			break
		}
		out = out[:i] + out[i+j+2:]
	}
	return strings.TrimSpace(out)
}

// chartPanel is one dashboard panel drawn from Prometheus range-query results.
type chartPanel struct {
	title  string
	unit   string
	series map[string][][2]float64 // legend → (seconds since start, value)
}

// writeDashboardPNG tiles the panels, three per line, into one PNG: the dashboard's panels as
// they would render, drawn from the same queries.
func writeDashboardPNG(path string, panels []chartPanel) error {
	const cols = 3
	rows := (len(panels) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, cp := range panels {
		p := plot.New()
		p.Title.Text = cp.title
		p.X.Label.Text = "seconds"
		p.Y.Label.Text = cp.unit
		p.Y.Min = 0
		p.Legend.Top = true
		p.Legend.Left = true
		p.Legend.TextStyle.Font.Size = vg.Points(7)
		p.Add(plotter.NewGrid())
		names := make([]string, 0, len(cp.series))
		for n := range cp.series {
			names = append(names, n)
		}
		sort.Strings(names)
		for j, n := range names {
			pts := make(plotter.XYs, len(cp.series[n]))
			for k, xy := range cp.series[n] {
				pts[k].X, pts[k].Y = xy[0], xy[1]
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			l.Color = plotutil.Color(j)
			l.Dashes = plotutil.Dashes(j / 7)
			p.Add(l)
			p.Legend.Add(n, l)
		}
		plots[i/cols][i%cols] = p
	}
	for r := range plots {
		for c := range plots[r] {
			if plots[r][c] == nil {
				plots[r][c] = plot.New()
				plots[r][c].HideAxes()
			}
		}
	}
	const w, h = 18 * vg.Inch, 3.6 * vg.Inch
	img := vgimg.New(w, h*vg.Length(rows))
	body := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, body)
	for r := range plots {
		for c := range plots[r] {
			plots[r][c].Draw(canvases[r][c])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
