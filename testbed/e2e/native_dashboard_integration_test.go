//go:build integration

package e2e

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/internal/testservice"
)

// quantileOf reads q of a panel query's histogram_quantile(q, ...).
var quantileOf = regexp.MustCompile(`^histogram_quantile\(([0-9.]+),`)

// TestDashboardLatencyOnNativeHistograms runs configs/native-histograms.yaml and a real
// Prometheus 3 storing native histograms with deploy/prometheus/rules.yaml loaded, then runs the
// latency queries of deploy/grafana/otelcol-red.json: their classic halves select nothing (there
// is no _bucket series), the whole queries draw the quantiles of the durations sent (within the
// exponential schema's bucket width), and the latency SLO's slow ratio is recorded from the
// native form.
func TestDashboardLatencyOnNativeHistograms(t *testing.T) {
	env, metricsURL := defaultEnv(t)
	StartCollector(t, configPath("native-histograms.yaml"), env)

	rules := filepath.Join(testservice.Root(), "deploy", "prometheus", "rules.yaml")
	prom := startPrometheus(t, "prometheus3", fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: red
    scrape_native_histograms: true
    static_configs: [{targets: [%q]}]
`, rules, scrapeTarget(metricsURL)))

	// rate() needs the histograms to grow between scrapes: a first wave makes the series exist,
	// a second (the same durations: sendKnownDurations is seeded) is the increase the panels see.
	const count = `histogram_count(sum(traces_span_metrics_duration_milliseconds{service_name="native"}))`
	waitCount := func(want float64) {
		t.Helper()
		var got []promSample
		require.True(t, waitFor(90*time.Second, func() bool {
			got, _ = prom.query(count)
			return len(got) == 1 && got[0].value() == want
		}), "%s = %v; last: %v", count, want, got)
	}
	first := sendKnownDurations(t, env["OTLP_GRPC_ENDPOINT"])
	var all []float64
	for _, ds := range first {
		all = append(all, ds...)
	}
	sort.Float64s(all)
	waitCount(float64(len(all)))
	sendKnownDurations(t, env["OTLP_GRPC_ENDPOINT"])
	waitCount(float64(2 * len(all)))

	_, panels := loadDashboard(t, "otelcol-red.json")
	vars := map[string]string{"service": "native", "span_kind": ".*"}
	latency := 0
	for _, p := range panels {
		for _, tg := range p.Targets {
			if !strings.Contains(tg.Expr, "traces_span_metrics_duration_milliseconds") {
				continue
			}
			latency++
			what := p.Title + " " + tg.RefID
			expr := grafanaExpand(tg.Expr, vars, "1m")
			classic, _, ok := strings.Cut(expr, "\nor\n")
			require.True(t, ok, "%s is `classic or native`", what)
			m := quantileOf.FindStringSubmatch(expr)
			require.NotNil(t, m, "%s is a histogram_quantile", what)
			q, err := strconv.ParseFloat(m[1], 64)
			require.NoError(t, err)
			want := all[int(math.Ceil(q*float64(len(all))))-1]

			// The recorded rates lag the scrapes by an evaluation or two.
			var got []promSample
			require.True(t, waitFor(30*time.Second, func() bool {
				got, err = prom.query(expr)
				return err == nil && len(got) == 1 && !math.IsNaN(got[0].value()) && got[0].value() > 0
			}), "%s returns one service; last: %v, %v", what, got, err)
			assert.Equal(t, "native", got[0].Metric["service_name"], what)
			// Bound by scale 2's bucket width (19%), as TestNativeHistogramsInPrometheus3 does.
			assert.InEpsilon(t, want, got[0].value(), math.Pow(2, 0.25)-1, "%s: p%g", what, 100*q)
			t.Logf("%s: p%g %.3f ms, true %.3f ms", what, 100*q, got[0].value(), want)

			none, err := prom.query(classic)
			require.NoError(t, err)
			assert.Empty(t, none, "%s: the classic half selects nothing", what)
		}
	}
	require.GreaterOrEqual(t, latency, 4, "latency queries of the dashboard")

	// No span took over 1000 ms: the slow ratio is recorded, and within the share of the bucket
	// holding 1000 ms that interpolation may count above it (under 1% at scale 2). An evaluation
	// whose window saw no increase yet records NaN (0 of 0 spans); wait for one that saw the
	// second wave.
	var slow []promSample
	require.True(t, waitFor(30*time.Second, func() bool {
		slow, _ = prom.query(`service_name:traces_span_metrics_slow_ratio:rate5m{service_name="native"}`)
		return len(slow) == 1 && !math.IsNaN(slow[0].value())
	}), "slow ratio recorded from native histograms; last: %v", slow)
	assert.InDelta(t, 0, slow[0].value(), 0.01, "slow ratio")
	t.Logf("slow ratio: %.5f", slow[0].value())
}
