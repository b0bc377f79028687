//go:build integration

package grafana

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// graphInstances are the graph gateways of the test: each edge's calls are spread over them.
var graphInstances = []string{"g1", "g2"}

// graphBounds are the server latency buckets of the test's histograms (seconds), +Inf last.
var graphBounds = []float64{0.01, 0.05, 0.1, 0.2, 0.4}

// graphSeries is what one graph gateway counts for one edge and one value of `failed`, per
// second: calls, and calls per server latency bucket (not cumulative; the last is above every
// bound). The client latency histogram gets a shape of its own, so a query reading it instead of
// the server's gets another p95.
type graphSeries struct {
	client, server, connectionType string
	instance                       string
	failed                         bool
	perBucket                      []float64 // len(graphBounds)+1, summing to the calls/s
}

func (s graphSeries) calls() float64 {
	var n float64
	for _, v := range s.perBucket {
		n += v
	}
	return n
}

// graphModel: checkout calls cart (both gateways, a quarter failed) and payments (half failed);
// cart calls its database (no failure, so the failed share is 0, not absent); frontend calls
// checkout (selected as the callee only); batch calls mail, which touches neither selected service. Rates are multiples of 1/4 so that every sum is exact.
var graphModel = []graphSeries{
	{"checkout", "cart", "", "g1", false, []float64{0.5, 1, 0.5, 0, 0, 0}},
	{"checkout", "cart", "", "g2", false, []float64{0, 0.5, 0.25, 0.25, 0, 0}},
	{"checkout", "cart", "", "g2", true, []float64{0, 0, 0, 0.5, 0.5, 0}},
	{"checkout", "payments", "", "g2", false, []float64{0, 0, 0.25, 0.25, 0, 0}},
	{"checkout", "payments", "", "g1", true, []float64{0, 0, 0, 0.25, 0.25, 0}},
	{"cart", "postgres", "database", "g1", false, []float64{1, 0.5, 0.25, 0.25, 0, 0}},
	{"frontend", "checkout", "", "g1", false, []float64{0, 1, 0, 0, 0, 0}},
	{"batch", "mail", "", "g2", false, []float64{0, 2, 0, 0, 0, 0}},
}

type edgeKey struct{ client, server, connectionType string }

// graphExpected is what the table and the node graph must show for the services selected,
// computed from the model: sums over instances and values of `failed`.
type graphExpected struct {
	calls, failed map[edgeKey]float64
	buckets       map[edgeKey][]float64
}

func expectedGraph(selected map[string]bool) graphExpected {
	e := graphExpected{calls: map[edgeKey]float64{}, failed: map[edgeKey]float64{}, buckets: map[edgeKey][]float64{}}
	for _, s := range graphModel {
		if !selected[s.client] && !selected[s.server] {
			continue
		}
		k := edgeKey{s.client, s.server, s.connectionType}
		e.calls[k] += s.calls()
		if s.failed {
			e.failed[k] += s.calls()
		}
		if e.buckets[k] == nil {
			e.buckets[k] = make([]float64, len(graphBounds)+1)
		}
		for i, v := range s.perBucket {
			e.buckets[k][i] += v
		}
	}
	return e
}

// bucketQuantile is Prometheus' histogram_quantile on non-cumulative bucket rates: linear
// interpolation inside the bucket holding the q-th observation, the same operations in the same
// order as the engine's, so the result is the same float.
func bucketQuantile(q float64, perBucket []float64) float64 {
	cum := make([]float64, len(perBucket))
	var n float64
	for i, v := range perBucket {
		n += v
		cum[i] = n
	}
	rank := q * n
	b := sort.Search(len(cum)-1, func(i int) bool { return cum[i] >= rank })
	if b == len(cum)-1 {
		return graphBounds[len(graphBounds)-1]
	}
	var start float64
	end, count := graphBounds[b], cum[b]
	if b > 0 {
		start = graphBounds[b-1]
		count -= cum[b-1]
		rank -= cum[b-1]
	}
	return start + (end-start)*(rank/count)
}

// latencyResolution (2^-20 s, about a microsecond) is what the p95 is compared at: Prometheus 2.42's
// promtool compares floats exactly, and the engine's interpolation may differ from this test's in
// the last bits. Both sides are rounded with PromQL's round(), whose arithmetic is exact for a power
// of two.
const latencyResolution = 1.0 / (1 << 20)

func roundTo(v, to float64) float64 { return math.Floor(v*(1/to)+0.5) / (1 / to) }

func promLabels(name string, kv ...string) string {
	var parts []string
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] != "" { // Prometheus drops empty labels
			parts = append(parts, fmt.Sprintf("%s=%q", kv[i], kv[i+1]))
		}
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// counter is a promtool series of a counter growing by perSecond every second, sampled each minute.
func counter(perSecond float64) string {
	return fmt.Sprintf("0+%sx20", strconv.FormatFloat(perSecond*60, 'g', -1, 64))
}

func graphInputSeries() []map[string]string {
	var in []map[string]string
	add := func(series string, perSecond float64) {
		in = append(in, map[string]string{"series": series, "values": counter(perSecond)})
	}
	for _, s := range graphModel {
		base := []string{"client", s.client, "server", s.server, "connection_type", s.connectionType,
			"failed", strconv.FormatBool(s.failed), "instance", s.instance, "job", "graph"}
		add(promLabels("traces_service_graph_request_total", base...), s.calls())
		if s.failed {
			add(promLabels("traces_service_graph_request_failed_total", base...), s.calls())
		}
		var cum float64
		for i, v := range s.perBucket {
			cum += v
			le := "+Inf"
			if i < len(graphBounds) {
				le = strconv.FormatFloat(graphBounds[i], 'g', -1, 64)
			}
			add(promLabels("traces_service_graph_request_server_seconds_bucket", append(base, "le", le)...), cum)
			// The client's view of the same calls, one bucket slower: never the table's latency.
			clientLe := "+Inf"
			if i+1 < len(graphBounds) {
				clientLe = strconv.FormatFloat(graphBounds[i+1], 'g', -1, 64)
			}
			if i+1 <= len(graphBounds) {
				add(promLabels("traces_service_graph_request_client_seconds_bucket", append(base, "le", clientLe)...), cum)
			}
		}
	}
	return in
}

type expSample struct {
	Labels string  `json:"labels"`
	Value  float64 `json:"value"`
}

type exprTest struct {
	Expr       string      `json:"expr"`
	EvalTime   string      `json:"eval_time"`
	ExpSamples []expSample `json:"exp_samples"`
}

// TestServiceGraphQueriesOnPromtool evaluates the service graph row's queries with promtool
// (Prometheus' engine) on series shaped like the servicegraph connector's over two graph
// gateways, for all services and for a selection, and compares with what the series imply: per
// edge the calls/s and failed share summed over gateways, the p95 of the server latency, and for
// the node graph one sample per client and server labelled id, source and target.
func TestServiceGraphQueriesOnPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool is missing: scripts/prometheus.sh install (make rules does)")
	ps := rowPanels(t, load(t), "Service graph")
	table := panelOfType(t, ps, "table")
	graph := panelOfType(t, ps, "nodeGraph")
	require.Len(t, table.Targets, 3)
	require.Len(t, graph.Targets, 1)

	var tests []exprTest
	for _, sel := range []struct {
		regex    string
		services map[string]bool
	}{
		{".*", map[string]bool{"checkout": true, "cart": true, "payments": true, "postgres": true, "frontend": true, "batch": true, "mail": true}},
		// Grafana's form of a multi-value selection; postgres and payments are reached through
		// the selected callers, frontend through its selected callee.
		{"(checkout|cart)", map[string]bool{"checkout": true, "cart": true}},
	} {
		exp := expectedGraph(sel.services)
		expand := func(expr string) string { return strings.ReplaceAll(expr, "$service", sel.regex) }
		var calls, failed, p95, edges []expSample
		nodeCalls := map[[2]string]float64{}
		for k, n := range exp.calls {
			l := []string{"client", k.client, "server", k.server, "connection_type", k.connectionType}
			calls = append(calls, expSample{promLabels("", l...), n})
			failed = append(failed, expSample{promLabels("", l...), exp.failed[k] / n})
			p95 = append(p95, expSample{promLabels("", l...), roundTo(bucketQuantile(0.95, exp.buckets[k]), latencyResolution)})
			nodeCalls[[2]string{k.client, k.server}] += n
		}
		for cs, n := range nodeCalls {
			edges = append(edges, expSample{promLabels("", "id", cs[0]+" -> "+cs[1], "source", cs[0], "target", cs[1]), n})
		}
		require.NotEmpty(t, calls)
		tests = append(tests,
			exprTest{expand(table.Targets[0].Expr), "10m", calls},
			exprTest{expand(table.Targets[1].Expr), "10m", failed},
			exprTest{fmt.Sprintf("round(%s, %g)", expand(table.Targets[2].Expr), latencyResolution), "10m", p95},
		)
		tests = append(tests, exprTest{expand(graph.Targets[0].Expr), "10m", edges})
	}

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "none.yaml"), []byte("groups: []\n"), 0o600))
	unit, err := yaml.Marshal(map[string]any{
		"rule_files":          []string{"none.yaml"},
		"evaluation_interval": "1m",
		"tests": []map[string]any{{
			"interval":         "1m",
			"input_series":     graphInputSeries(),
			"promql_expr_test": tests,
		}},
	})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "servicegraph_test.yaml"), unit, 0o600))
	cmd := exec.Command(promtool, "test", "rules", "servicegraph_test.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool test rules:\n%s", out)
}
