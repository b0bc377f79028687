//go:build integration

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// awkwardOverlay lets configs/default.yaml take OTLP metrics into cachedprom beside the RED
// metrics, as a gateway that also forwards application metrics would. default.yaml's otlpwire
// receiver serves traces only: metrics come in through a stock otlp receiver on an endpoint of
// its own (OTLP_METRICS_ENDPOINT).
const awkwardOverlay = `
receivers:
  otlp/metrics:
    protocols:
      grpc:
        endpoint: ${env:OTLP_METRICS_ENDPOINT}
service:
  pipelines:
    metrics/in:
      receivers: [otlp/metrics]
      exporters: [cachedprom]
`

// awkwardMetrics is one OTLP batch of what Prometheus labels cannot say as OTLP does: labels equal
// after sanitizing, a label value that is not UTF-8, a gauge x_count beside a histogram x, a
// metric named target_info, and one counter written with its attribute as int, string and double.
func awkwardMetrics(ts time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "awkward")
	rm.Resource().Attributes().PutStr("service.instance.id", "awkward-1")
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	t := pcommon.NewTimestampFromTime(ts)

	g := ms.AppendEmpty()
	g.SetName("x_count")
	gp := g.SetEmptyGauge().DataPoints().AppendEmpty()
	gp.Attributes().PutStr("http.method", "GET")
	gp.Attributes().PutStr("http_method", "get")
	gp.SetTimestamp(t)
	gp.SetDoubleValue(7)

	u := ms.AppendEmpty()
	u.SetName("queue_depth")
	up := u.SetEmptyGauge().DataPoints().AppendEmpty()
	up.Attributes().PutStr("queue", "orders\xff")
	up.SetTimestamp(t)
	up.SetDoubleValue(4)

	ti := ms.AppendEmpty()
	ti.SetName("target_info")
	tp := ti.SetEmptyGauge().DataPoints().AppendEmpty()
	tp.SetTimestamp(t)
	tp.SetDoubleValue(1)

	h := ms.AppendEmpty()
	h.SetName("x")
	hh := h.SetEmptyHistogram()
	hh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	hp := hh.DataPoints().AppendEmpty()
	hp.Attributes().PutStr("http.method", "GET")
	hp.SetStartTimestamp(pcommon.NewTimestampFromTime(ts.Add(-time.Minute)))
	hp.SetTimestamp(t)
	hp.ExplicitBounds().FromRaw([]float64{1})
	hp.BucketCounts().FromRaw([]uint64{1, 1})
	hp.SetCount(2)
	hp.SetSum(3)

	c := ms.AppendEmpty()
	c.SetName("requests")
	cs := c.SetEmptySum()
	cs.SetIsMonotonic(true)
	cs.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for _, typed := range []func(pcommon.Map){
		func(m pcommon.Map) { m.PutInt("code", 200) },
		func(m pcommon.Map) { m.PutStr("code", "200") },
		func(m pcommon.Map) { m.PutDouble("code", 200) },
	} {
		cp := cs.DataPoints().AppendEmpty()
		typed(cp.Attributes())
		cp.SetStartTimestamp(pcommon.NewTimestampFromTime(ts.Add(-time.Minute)))
		cp.SetTimestamp(t)
		cp.SetIntValue(3)
	}
	return md
}

// TestAwkwardMetricsScrapedByPrometheus sends awkwardMetrics through the binary and lets Debian's
// Prometheus scrape the result: the target is up, Prometheus found no duplicate or out-of-order
// samples, every value reads as sent (the three typed writers of one counter add up, the
// histogram keeps x_count), and each repair is counted in the exporter's own telemetry.
func TestAwkwardMetricsScrapedByPrometheus(t *testing.T) {
	env, metricsURL := defaultEnv(t)
	env["OTLP_METRICS_ENDPOINT"] = freeAddr(t)
	StartCollector(t, configPath("default.yaml"), env, overlayFiles(t, awkwardOverlay)...)

	conn, err := grpc.NewClient(env["OTLP_METRICS_ENDPOINT"], grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = pmetricotlp.NewGRPCClient(conn).Export(ctx, pmetricotlp.NewExportRequestFromMetrics(awkwardMetrics(time.Now())))
	require.NoError(t, err)

	// client_golang's parser (the one scrape uses) reads it, with the values as sent.
	require.True(t, waitFor(30*time.Second, func() bool {
		fams, err := scrape(metricsURL)
		return err == nil && fams["requests_total"] != nil
	}), "requests_total never appeared on %s", metricsURL)
	fams := Scrape(t, metricsURL)
	requests, _ := SumSeries(fams, "requests_total", map[string]string{"code": "200"})
	assert.Equal(t, 9.0, requests, "requests_total{code=\"200\"}: three writers of 3")
	hist, n := SumSeries(fams, "x", nil)
	assert.Equal(t, 2.0, hist, "histogram x keeps its count")
	assert.Equal(t, 1, n)

	prom := startPrometheus(t, "prometheus", fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: awkward
    honor_labels: true
    static_configs: [{targets: [%q]}]
`, scrapeTarget(metricsURL)))

	var up []promSample
	require.True(t, waitFor(60*time.Second, func() bool {
		up, err = prom.query(`up{job="awkward"} == 1 and on() scrape_samples_scraped{job="awkward"} > 0`)
		return err == nil && len(up) == 1
	}), "Prometheus never scraped the target successfully: %v %v", up, err)
	// A few more scrapes, so a problem that shows only on repeated scrapes shows.
	time.Sleep(3 * time.Second)

	checks := []struct {
		expr, what string
		want       float64
	}{
		{`up{job="awkward"}`, "target up", 1},
		{`sum(requests_total{code="200"})`, "the typed writers in one series", 9},
		{`x_count{http_method="GET"}`, "x_count is the histogram's", 2},
		{`count(queue_depth)`, "the non-UTF-8 label value, repaired", 1},
		{`count(x_count)`, "one x_count series: the gauge is left out", 1},
	}
	for _, c := range checks {
		res, err := prom.query(c.expr)
		require.NoError(t, err, c.expr)
		require.Len(t, res, 1, "%s: %s", c.what, c.expr)
		t.Logf("%s = %v (%s)", c.expr, res[0].value(), c.what)
		assert.Equal(t, c.want, res[0].value(), "%s: %s", c.what, c.expr)
	}
	// Prometheus counts samples it drops as duplicates or out of order in its own metrics.
	own := Scrape(t, prom.base+"/metrics")
	for _, name := range []string{
		"prometheus_target_scrapes_sample_duplicate_timestamp_total",
		"prometheus_target_scrapes_sample_out_of_order_total",
		"prometheus_target_scrapes_sample_out_of_bounds_total",
	} {
		v, _ := SumSeries(own, name, nil)
		t.Logf("Prometheus' %s = %v", name, v)
		assert.Zero(t, v, "Prometheus' %s", name)
	}

	tel := Scrape(t, telemetryURLOf(env))
	for _, reason := range []string{"colliding_labels", "invalid_utf8", "merged"} {
		v, _ := SumSeries(tel, "otelcol_exporter_cachedprom_adjusted_points_total", map[string]string{"reason": reason})
		t.Logf("adjusted_points{reason=%q} = %v", reason, v)
		assert.Positive(t, v, "adjusted_points{reason=%q}", reason)
	}
	hidden, _ := SumSeries(tel, "otelcol_exporter_cachedprom_hidden_series", nil)
	t.Logf("hidden_series = %v", hidden)
	assert.Positive(t, hidden, "hidden_series (the gauge x_count, the sent target_info)")
}
