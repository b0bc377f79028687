//go:build integration

package cachedprom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"
	"github.com/otelcol-red/otelcol-red/internal/testservice"
)

// promResult is the part of Prometheus' /api/v1/query answer we read.
type promResult struct {
	Status string `json:"status"`
	Data   struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	} `json:"data"`
}

func promQuery(t *testing.T, addr, q string) promResult {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
	require.NoError(t, err)
	defer resp.Body.Close()
	var r promResult
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	require.Equal(t, "success", r.Status)
	return r
}

// expectedCalls returns, per (service, span name, kind, status), the calls
// counter value of the last batch: what Prometheus must have stored.
func expectedCalls(batches []pmetric.Metrics) map[string]float64 {
	want := map[string]float64{}
	for _, md := range batches {
		rms := md.ResourceMetrics()
		for i := 0; i < rms.Len(); i++ {
			sms := rms.At(i).ScopeMetrics()
			for j := 0; j < sms.Len(); j++ {
				ms := sms.At(j).Metrics()
				for k := 0; k < ms.Len(); k++ {
					m := ms.At(k)
					if m.Name() != "traces.span.metrics.calls" {
						continue
					}
					dps := m.Sum().DataPoints()
					for d := 0; d < dps.Len(); d++ {
						a := dps.At(d).Attributes()
						get := func(k string) string { v, _ := a.Get(k); return v.AsString() }
						key := strings.Join([]string{get("service.name"), get("span.name"), get("span.kind"), get("status.code")}, "|")
						want[key] = float64(dps.At(d).IntValue())
					}
				}
			}
		}
	}
	return want
}

// TestPrometheusScrapesCachedprom lets Debian's Prometheus scrape two
// cachedprom instances (text, and OpenMetrics which Prometheus prefers) fed
// with tracemetrics output, then with spanmetrics output, and checks through
// its HTTP API that the scrapes succeeded and the stored counters equal what
// was sent.
func TestPrometheusScrapesCachedprom(t *testing.T) {
	for _, connector := range []struct {
		name string
		run  func(testing.TB, string, ...ptrace.Traces) []pmetric.Metrics
	}{
		{"tracemetrics", tracemetricsOutput},
		{"spanmetrics", spanmetricsOutput},
	} {
		t.Run(connector.name, func(t *testing.T) {
			testPrometheusScrapes(t, connector.run)
		})
	}
}

func testPrometheusScrapes(t *testing.T, connectorOutput func(testing.TB, string, ...ptrace.Traces) []pmetric.Metrics) {
	base := time.Now().Add(-time.Minute)
	batches := connectorOutput(t, "AGGREGATION_TEMPORALITY_CUMULATIVE",
		testTraces(3, 10, base), testTraces(3, 10, base), testTraces(2, 5, base))
	want := expectedCalls(batches)
	require.NotEmpty(t, want)

	textExp, textURL := startOurs(t, func(c *Config) { c.RenderInterval = 50 * time.Millisecond })
	omExp, omURL := startOurs(t, func(c *Config) {
		c.RenderInterval = 50 * time.Millisecond
		c.EnableOpenMetrics = true
	})
	for _, e := range []*cachedExporter{textExp, omExp} {
		for _, b := range batches {
			c := pmetric.NewMetrics()
			b.CopyTo(c)
			require.NoError(t, e.ConsumeMetrics(context.Background(), c))
		}
		e.renderNow()
	}

	cfgPath := filepath.Join(t.TempDir(), "prometheus.yml")
	host := func(u string) string { return strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/metrics") }
	require.NoError(t, os.WriteFile(cfgPath, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: cachedprom_text
    static_configs: [{targets: ["%s"]}]
  - job_name: cachedprom_openmetrics
    static_configs: [{targets: ["%s"]}]
`, host(textURL), host(omURL))), 0o600))
	t.Setenv("PROM_CONFIG", cfgPath)
	addr := testservice.Start(t, "prometheus")

	for _, job := range []string{"cachedprom_text", "cachedprom_openmetrics"} {
		t.Run(job, func(t *testing.T) {
			require.Eventually(t, func() bool {
				r := promQuery(t, addr, fmt.Sprintf(`up{job=%q}`, job))
				return len(r.Data.Result) == 1 && r.Data.Result[0].Value[1] == "1"
			}, 60*time.Second, 500*time.Millisecond, "target never up")

			// The target's last scrape reported no error (a parse error
			// would be here and would also make up 0).
			resp, err := http.Get("http://" + addr + "/api/v1/targets")
			require.NoError(t, err)
			var targets struct {
				Data struct {
					ActiveTargets []struct {
						ScrapePool string `json:"scrapePool"`
						Health     string `json:"health"`
						LastError  string `json:"lastError"`
					} `json:"activeTargets"`
				} `json:"data"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&targets))
			resp.Body.Close()
			for _, at := range targets.Data.ActiveTargets {
				if at.ScrapePool == job {
					assert.Equal(t, "up", at.Health)
					assert.Empty(t, at.LastError)
				}
			}

			var got promResult
			require.Eventually(t, func() bool {
				got = promQuery(t, addr, fmt.Sprintf(`traces_span_metrics_calls_total{job=%q}`, job))
				return len(got.Data.Result) == len(want)
			}, 30*time.Second, 500*time.Millisecond)
			for _, r := range got.Data.Result {
				// Prometheus keeps the exposition's job and instance as
				// exported_job / exported_instance.
				key := strings.Join([]string{r.Metric["service_name"], r.Metric["span_name"], r.Metric["span_kind"], r.Metric["status_code"]}, "|")
				w, ok := want[key]
				if !assert.True(t, ok, "unexpected series %v", r.Metric) {
					continue
				}
				v, err := strconv.ParseFloat(r.Value[1].(string), 64)
				require.NoError(t, err)
				assert.Equal(t, w, v, key)
			}

			// The duration histogram's +Inf bucket equals the call count.
			inf := promQuery(t, addr, fmt.Sprintf(`sum(traces_span_metrics_duration_milliseconds_bucket{job=%q,le="+Inf"})`, job))
			var total float64
			for _, w := range want {
				total += w
			}
			require.Len(t, inf.Data.Result, 1)
			assert.Equal(t, strconv.FormatFloat(total, 'f', -1, 64), inf.Data.Result[0].Value[1])
		})
	}

	// promtool's linter. The connector output above has no descriptions
	// and millisecond units, which the linter flags whoever renders it: the
	// stock exporter's exposition of the same input must draw exactly the
	// same report, and no parse error.
	stock, stockURL := promtest.StartStock(t, nil)
	for _, b := range batches {
		c := pmetric.NewMetrics()
		b.CopyTo(c)
		require.NoError(t, stock.ConsumeMetrics(context.Background(), c))
	}
	stockBody, _ := promtest.Scrape(t, stockURL, "", false)
	ourBody, _ := promtest.Scrape(t, textURL, "", false)
	stockReport, stockErr := promtool(t, stockBody, "check", "metrics")
	ourReport, ourErr := promtool(t, ourBody, "check", "metrics")
	assert.Equal(t, stockReport, ourReport)
	assert.Equal(t, exitCode(stockErr), exitCode(ourErr))
	assert.NotEqual(t, 1, exitCode(ourErr), "promtool could not parse the exposition:\n%s", ourReport)

	// With seconds and descriptions the exposition must be lint-clean.
	clean, cleanURL := startOurs(t, nil)
	for _, b := range connectorOutput(t, "AGGREGATION_TEMPORALITY_CUMULATIVE", testTraces(3, 10, base)) {
		rms := b.ResourceMetrics()
		for i := 0; i < rms.Len(); i++ {
			ms := rms.At(i).ScopeMetrics().At(0).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				m.SetDescription("Spans by " + m.Name())
				if m.Unit() == "ms" {
					m.SetUnit("s")
				}
			}
		}
		require.NoError(t, clean.ConsumeMetrics(context.Background(), b))
	}
	clean.renderNow()
	cleanBody, _ := promtest.Scrape(t, cleanURL, "", false)
	report, err := promtool(t, cleanBody, "check", "metrics")
	assert.NoError(t, err, "promtool check metrics:\n%s", report)
	assert.Empty(t, strings.TrimSpace(report))
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// promtool runs `scripts/prometheus.sh promtool args...` with stdin.
func promtool(t *testing.T, stdin []byte, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(testservice.Root(), "scripts", "prometheus.sh"), "promtool"}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestPrometheusScrapesNativeHistograms lets Debian's Prometheus (2.42) with
// native histograms enabled scrape cachedprom, which its Accept header asks
// for protobuf: the first scrape gets text and asks for a render, the next
// ones the protobuf body. Delta exponential histograms whose scale falls
// from batch to batch must arrive as native histograms with the merged
// count and sum, with no scrape error.
func TestPrometheusScrapesNativeHistograms(t *testing.T) {
	e, url := startOurs(t, func(c *Config) { c.RenderInterval = 50 * time.Millisecond })
	base := time.Now().Add(-time.Minute)
	wantCount, wantSum := map[string]uint64{}, map[string]float64{}
	for batch := range 3 {
		md := pmetric.NewMetrics()
		m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName("payload.size")
		h := m.SetEmptyExponentialHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
		for s := range 3 {
			p := promtest.ExpPoint{Scale: int32(4 - batch - s), PosOffset: int32(batch*5 - 3), Pos: []uint64{1, 0, 4, 2}, NegOffset: 1, Neg: []uint64{uint64(s)}, ZeroCount: 2, Sum: float64(10 * (batch + 1))}
			dp := h.DataPoints().AppendEmpty()
			p.Build().CopyTo(dp)
			dp.Attributes().PutStr("shard", strconv.Itoa(s))
			dp.SetStartTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(batch) * time.Second)))
			dp.SetTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(batch+1) * time.Second)))
			wantCount[strconv.Itoa(s)] += dp.Count()
			wantSum[strconv.Itoa(s)] += dp.Sum()
		}
		require.NoError(t, e.ConsumeMetrics(context.Background(), md))
	}
	e.renderNow()

	cfgPath := filepath.Join(t.TempDir(), "prometheus.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: cachedprom_native
    static_configs: [{targets: ["%s"]}]
`, strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/metrics"))), 0o600))
	t.Setenv("PROM_CONFIG", cfgPath)
	t.Setenv("PROM_FLAGS", "--enable-feature=native-histograms")
	addr := testservice.Start(t, "prometheus")

	var got promResult
	require.Eventually(t, func() bool {
		got = promQuery(t, addr, `histogram_count(payload_size{job="cachedprom_native"})`)
		return len(got.Data.Result) == len(wantCount)
	}, 60*time.Second, 500*time.Millisecond, "no native histograms stored")
	require.NotNil(t, e.snapshot.Load().Body(render.BodyProto).Gzip, "the protobuf body was rendered")
	for _, r := range got.Data.Result {
		shard := r.Metric["shard"]
		assert.Equal(t, strconv.FormatUint(wantCount[shard], 10), r.Value[1], "count of shard %s", shard)
	}
	sums := promQuery(t, addr, `histogram_sum(payload_size{job="cachedprom_native"})`)
	require.Len(t, sums.Data.Result, len(wantSum))
	for _, r := range sums.Data.Result {
		shard := r.Metric["shard"]
		assert.Equal(t, strconv.FormatFloat(wantSum[shard], 'f', -1, 64), r.Value[1], "sum of shard %s", shard)
	}

	resp, err := http.Get("http://" + addr + "/api/v1/targets")
	require.NoError(t, err)
	defer resp.Body.Close()
	var targets struct {
		Data struct {
			ActiveTargets []struct {
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&targets))
	require.Len(t, targets.Data.ActiveTargets, 1)
	assert.Equal(t, "up", targets.Data.ActiveTargets[0].Health)
	assert.Empty(t, targets.Data.ActiveTargets[0].LastError)
}
