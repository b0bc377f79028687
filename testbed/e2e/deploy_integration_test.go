//go:build integration

package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/testservice"
	"github.com/otelcol-red/otelcol-red/testbed/datasenders"
)

// The traffic of TestDashboardOnRealPrometheus, per Kafka message (one every deployBatchEvery):
//
//	checkout SERVER  80 × "GET /cart" 30 ms ok, 10 × "POST /pay" 300 ms error, 10 × "POST /pay" 300 ms ok
//	cart     SERVER  40 × "GET /items" 3 ms ok
//	cart     CLIENT  40 × "GET" 1 ms Redis (db.system=redis), over hotspotfilter's budget
//	ids      SERVER  deployNewNames × a span name never seen before, past max_series → overflow series
//
// So checkout's error ratio is 10/100, its latency quantiles follow from 80 spans in the (10, 50]
// bucket and 20 in (200, 400], and checkout calls are 2.5× cart's SERVER calls.
const (
	deployBatchEvery = 100 * time.Millisecond
	deployNewNames   = 5
	deployMaxSeries  = 100
	deployRedisBurst = 10
	deployChartLoad  = 6 * time.Minute
)

// deployOverlay is merged over configs/kafka-gateway.yaml (after gatewayOverlay): a series cap
// low enough that the "ids" service overflows, exemplars on (of any span: the dashboard's panel
// is under test here, not which spans the store keeps, so slow_threshold is 0 rather than the
// gateway's SLOW_THRESHOLD_NS), and OpenMetrics so they are served;
// and the service graph of the same spans (tracegraph) on the same /metrics, for the dashboard's Service graph
// row (a graph gateway serves the same series): root SERVER spans (every SERVER span here) become
// edges from "user", the
// Redis CLIENT spans edges to the virtual node "redis", once their 1 s in the store is over.
const deployOverlay = `
connectors:
  tracemetrics:
    max_series: 100
    exemplars:
      enabled: true
      slow_threshold: 0s
  tracegraph:
    metrics_flush_interval: 1s
    store:
      ttl: 1s
      max_items: 100000
exporters:
  cachedprom:
    enable_open_metrics: true
service:
  pipelines:
    traces/in:
      exporters: [tracemetrics, hotspotfilter, tracegraph]
    metrics/red:
      receivers: [tracemetrics, hotspotfilter, tracegraph]
`

// deployBatch is one message of the traffic above; seq keeps trace IDs and new span names unique.
func deployBatch(seq int, now time.Time) ptrace.Traces {
	td := ptrace.NewTraces()
	add := func(service string) ptrace.SpanSlice {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", service)
		return rs.ScopeSpans().AppendEmpty().Spans()
	}
	n := 0
	span := func(spans ptrace.SpanSlice, name string, kind ptrace.SpanKind, d time.Duration, isErr bool) ptrace.Span {
		s := spans.AppendEmpty()
		s.SetName(name)
		s.SetKind(kind)
		var tid pcommon.TraceID
		binary.BigEndian.PutUint64(tid[:8], uint64(seq)+1)
		binary.BigEndian.PutUint64(tid[8:], uint64(n)+1)
		s.SetTraceID(tid)
		var sid pcommon.SpanID
		binary.BigEndian.PutUint64(sid[:], uint64(seq)<<16|uint64(n)+1)
		s.SetSpanID(sid)
		n++
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-d)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
		if isErr {
			s.Status().SetCode(ptrace.StatusCodeError)
		}
		return s
	}
	checkout := add("checkout")
	for i := 0; i < 80; i++ {
		span(checkout, "GET /cart", ptrace.SpanKindServer, 30*time.Millisecond, false)
	}
	for i := 0; i < 20; i++ {
		span(checkout, "POST /pay", ptrace.SpanKindServer, 300*time.Millisecond, i%2 == 0)
	}
	cart := add("cart")
	for i := 0; i < 40; i++ {
		span(cart, "GET /items", ptrace.SpanKindServer, 3*time.Millisecond, false)
	}
	for i := 0; i < 40; i++ {
		span(cart, "GET", ptrace.SpanKindClient, time.Millisecond, false).Attributes().PutStr("db.system", "redis")
	}
	ids := add("ids")
	for i := 0; i < deployNewNames; i++ {
		span(ids, fmt.Sprintf("GET /orders/%d", seq*deployNewNames+i), ptrace.SpanKindServer, time.Millisecond, false)
	}
	return td
}

// TestDashboardOnRealPrometheus runs the gateway tier as deployed (configs/kafka-gateway.yaml,
// Kafka in) under steady load, has Debian's Prometheus scrape its RED metrics and its own
// telemetry with deploy/prometheus/rules.yaml loaded, then runs every query of every panel of
// deploy/grafana/otelcol-red.json and of its template variables through Prometheus' HTTP API:
// each must return data, and the RED panels must show the values the traffic implies.
//
// With DEPLOY_CHARTS_DIR set it keeps the load on for deployChartLoad and draws the panels' data over the run into
// $DEPLOY_CHARTS_DIR/dashboard.png (the README's picture of the dashboard).
func TestDashboardOnRealPrometheus(t *testing.T) {
	broker := startKafka(t)
	topic := "deploy-red"
	createTopic(t, topic, 2)

	t.Setenv("HOTSPOT_BUDGET", "10")
	t.Setenv("HOTSPOT_BURST", fmt.Sprint(deployRedisBurst))
	g := startGateway(t, broker, topic, "deploy-red", deployOverlay)

	metricsTarget := scrapeTarget(g.metricsURL)
	rules := filepath.Join(testservice.Root(), "deploy", "prometheus", "rules.yaml")
	prom := startPrometheus(t, "prometheus", fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: otelcol-red
    static_configs: [{targets: [%q]}]
  - job_name: otelcol-red-telemetry
    static_configs: [{targets: [%q]}]
`, rules, metricsTarget, scrapeTarget(g.telemetryURL)))

	producer, err := datasenders.NewKafkaProducer([]string{broker}, topic)
	require.NoError(t, err)
	defer producer.Close()
	ctx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	var sent, failed atomic.Int64
	loadStart := time.Now()
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		tick := time.NewTicker(deployBatchEvery)
		defer tick.Stop()
		for seq := 0; ; seq++ {
			if err := producer.SendTraces(ctx, deployBatch(seq, time.Now())); err != nil {
				if ctx.Err() != nil {
					return
				}
				failed.Add(1)
			} else {
				sent.Add(1)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	defer func() { stopLoad(); <-loadDone }()

	d, panels := loadDashboard(t, "otelcol-red.json")
	require.NotEmpty(t, panels)
	all := map[string]string{"service": ".*", "span_kind": ".*"}
	const rateInterval = "30s"

	// Every panel query returns data once the load has run for a while: poll until it does (the
	// first flushes, scrapes and rule evaluations take seconds), at most two minutes.
	type pending struct{ panel, ref, expr string }
	var queries []pending
	for _, p := range panels {
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			queries = append(queries, pending{p.Title, tg.RefID, grafanaExpand(tg.Expr, all, rateInterval)})
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var empty []string
		for _, q := range queries {
			res, err := prom.query(q.expr)
			require.NoError(t, err, "panel %q %s", q.panel, q.ref)
			if len(res) == 0 {
				empty = append(empty, q.panel+" "+q.ref)
			}
		}
		if len(empty) == 0 {
			break
		}
		if time.Now().After(deadline) {
			var names []string
			_ = prom.get("/api/v1/label/__name__/values", nil, &names)
			t.Fatalf("panels without data after 2 minutes of load: %v\nmetric names in Prometheus: %v", empty, names)
		}
		time.Sleep(2 * time.Second)
	}
	// Rates over 5m windows need a few samples after the first flush to settle into ratios.
	time.Sleep(15 * time.Second)
	require.Zero(t, failed.Load(), "Kafka produce errors")
	t.Logf("load: %d messages (%d spans) in %s", sent.Load(), sent.Load()*int64(200+deployNewNames), time.Since(loadStart).Round(time.Second))

	// Template variables: the services and span kinds of the traffic.
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q := fmt.Sprint(v.Query)
		if m, ok := v.Query.(map[string]any); ok {
			q = fmt.Sprint(m["query"])
		}
		q = grafanaExpand(q, all, rateInterval)
		require.True(t, strings.HasPrefix(q, "label_values(") && strings.HasSuffix(q, ")"), "variable %s: %s", v.Name, q)
		args := strings.TrimSuffix(strings.TrimPrefix(q, "label_values("), ")")
		i := strings.LastIndex(args, ",")
		vals, err := prom.labelValues(strings.TrimSpace(args[:i]), strings.TrimSpace(args[i+1:]))
		require.NoError(t, err, "variable %s", v.Name)
		switch v.Name {
		case "service":
			assert.Subset(t, vals, []string{"checkout", "cart", "ids"}, "variable service")
		case "span_kind":
			assert.Subset(t, vals, []string{"SPAN_KIND_SERVER", "SPAN_KIND_CLIENT"}, "variable span_kind")
		default:
			t.Errorf("variable %s has no check", v.Name)
		}
	}

	exprOf := func(title, ref string, vars map[string]string) string {
		for _, p := range panels {
			for _, tg := range p.Targets {
				if p.Title == title && tg.RefID == ref {
					return grafanaExpand(tg.Expr, vars, rateInterval)
				}
			}
		}
		t.Fatalf("no panel %q with query %s", title, ref)
		return ""
	}
	byLabel := func(title, ref string, vars map[string]string, label string) map[string]float64 {
		res, err := prom.query(exprOf(title, ref, vars))
		require.NoError(t, err)
		out := map[string]float64{}
		for _, s := range res {
			out[s.Metric[label]] = s.value()
		}
		return out
	}
	near := func(want, got float64, rel float64, what string) {
		t.Helper()
		assert.InDelta(t, want, got, math.Abs(want)*rel, "%s: want %.4g, got %.4g", what, want, got)
	}
	server := map[string]string{"service": "checkout|cart", "span_kind": "SPAN_KIND_SERVER"}

	// RED by service.
	rate := byLabel("Rate", "A", server, "service_name")
	require.Contains(t, rate, "checkout")
	require.Contains(t, rate, "cart")
	near(100.0/40.0, rate["checkout"]/rate["cart"], 0.03, "checkout calls ÷ cart SERVER calls")
	sentRate := 100 / deployBatchEvery.Seconds()
	assert.Greater(t, rate["checkout"], 0.0)
	assert.LessOrEqual(t, rate["checkout"], sentRate*1.1, "checkout calls/s cannot exceed what was sent")

	errRatio := byLabel("Error ratio", "A", server, "service_name")
	near(0.1, errRatio["checkout"], 0.03, "checkout error ratio")
	assert.Equal(t, 0.0, errRatio["cart"], "cart error ratio")

	// Quantiles by linear interpolation inside the buckets, as histogram_quantile computes them:
	// checkout has 80 of 100 spans in (10, 50] and 20 in (200, 400]; cart all in (2, 4].
	for ref, want := range map[string]map[string]float64{
		"A": {"checkout": 10 + 40*50.0/80, "cart": 2 + 2*0.5},
		"B": {"checkout": 200 + 200*15.0/20, "cart": 2 + 2*0.95},
		"C": {"checkout": 200 + 200*19.0/20, "cart": 2 + 2*0.99},
	} {
		got := byLabel("Latency p50 / p95 / p99", ref, server, "service_name")
		for svc, w := range want {
			near(w, got[svc], 0.03, "latency "+ref+" "+svc)
		}
	}
	p99ex := byLabel("Latency p99 with exemplars", "A", server, "service_name")
	near(390, p99ex["checkout"], 0.03, "raw p99 of checkout")

	// Top span names.
	res, err := prom.query(exprOf("Top 10 span names by rate", "A", all))
	require.NoError(t, err)
	require.NotEmpty(t, res)
	byName := map[string]float64{}
	busiest := ""
	for _, s := range res {
		name := s.Metric["service_name"] + " " + s.Metric["span_name"]
		byName[name] = s.value()
		if busiest == "" || s.value() > byName[busiest] {
			busiest = name
		}
	}
	assert.Equal(t, "checkout GET /cart", busiest, "busiest span name")
	near(80.0/40.0, byName["checkout GET /cart"]/byName["cart GET /items"], 0.03, "GET /cart ÷ GET /items")
	near(80.0/20.0, byName["checkout GET /cart"]/byName["checkout POST /pay"], 0.03, "GET /cart ÷ POST /pay")
	res, err = prom.query(exprOf("Top 10 span names by errors", "A", all))
	require.NoError(t, err)
	require.Len(t, res, 1, "one span name fails")
	assert.Equal(t, "POST /pay", res[0].Metric["span_name"])
	near(10.0/80.0, res[0].value()/byName["checkout GET /cart"], 0.03, "POST /pay errors ÷ GET /cart calls")

	// Service graph row: checkout and cart are called by "user" (root SERVER spans), cart calls
	// Redis; checkout fails 10 of its 100 calls, 20 of which last 300 ms and 80 last 30 ms.
	edges := func(ref string) map[string]float64 {
		res, err := prom.query(exprOf("Service graph edges", ref, all))
		require.NoError(t, err)
		out := map[string]float64{}
		for _, s := range res {
			out[s.Metric["client"]+"→"+s.Metric["server"]] = s.value()
		}
		return out
	}
	reqs := edges("A")
	near(100.0/40.0, reqs["user→checkout"]/reqs["user→cart"], 0.03, "user→checkout ÷ user→cart requests")
	near(1, reqs["cart→redis"]/reqs["user→cart"], 0.03, "cart→redis ÷ user→cart requests")
	failedShare := edges("B")
	near(0.1, failedShare["user→checkout"], 0.03, "user→checkout failed share")
	assert.Equal(t, 0.0, failedShare["user→cart"], "user→cart failed share")
	// p95 in the (0.2, 0.4] s bucket: 15 of its 20 spans in.
	near(0.2+0.2*15.0/20, edges("C")["user→checkout"], 0.03, "user→checkout p95 server latency (s)")
	res, err = prom.query(exprOf("Service map", "edges", all))
	require.NoError(t, err)
	mapEdges := map[string]bool{}
	for _, s := range res {
		mapEdges[s.Metric["source"]+"→"+s.Metric["target"]] = true
	}
	assert.Equal(t, map[string]bool{"user→checkout": true, "user→cart": true, "user→ids": true, "cart→redis": true}, mapEdges, "service map edges")

	// Collector row.
	accepted := byLabel("Ingest rate", "A", all, "receiver")
	assert.Greater(t, accepted["kafka"], 0.0, "spans accepted by the kafka receiver")
	for _, ref := range []string{"B", "C"} {
		for inst, v := range byLabel("Ingest rate", ref, all, "instance") {
			assert.Zero(t, v, "refused spans (%s) on %s", ref, inst)
		}
	}
	for inst, v := range byLabel("Series", "A", all, "instance") {
		assert.GreaterOrEqual(t, v, float64(deployMaxSeries), "tracemetrics series on %s: at the cap", inst)
		assert.LessOrEqual(t, v, float64(deployMaxSeries)+10, "tracemetrics series on %s: at most the cap and the overflow series", inst)
	}
	// cachedprom holds one label set per RED series (calls and duration share it) and the service
	// graph's few (4 edges, a failed and a total label set each at most, and the flush's own), and
	// its own cap (the default) is far away: nothing of its own overflows.
	for inst, v := range byLabel("Series", "B", all, "instance") {
		assert.GreaterOrEqual(t, v, float64(deployMaxSeries), "cachedprom label sets on %s: one per RED series", inst)
		assert.LessOrEqual(t, v, float64(deployMaxSeries)+10+10, "cachedprom label sets on %s: one per RED series and edge", inst)
	}
	for inst, v := range byLabel("Overflow and dropped points", "A", all, "instance") {
		near(deployNewNames/deployBatchEvery.Seconds(), v, 0.5, "overflow spans/s on "+inst)
	}
	for _, ref := range []string{"B", "C"} {
		for inst, v := range byLabel("Overflow and dropped points", ref, all, "instance") {
			assert.Zero(t, v, "cachedprom overflow (B) or dropped (C) points/s on %s", inst)
		}
	}
	// One Prometheus scrapes once per interval: nothing to refuse.
	for inst, v := range byLabel("Refused scrapes and skipped flushes", "A", all, "instance") {
		assert.Zero(t, v, "scrapes refused/s on %s", inst)
	}
	for inst, v := range byLabel("Refused scrapes and skipped flushes", "B", all, "instance") {
		t.Logf("flushes skipped/s on %s: %g", inst, v)
		assert.GreaterOrEqual(t, v, 0.0, "flushes skipped/s on %s", inst)
	}
	for _, ref := range []string{"A", "B"} {
		for inst, v := range byLabel("Flush and render duration", ref, all, "instance") {
			assert.Greater(t, v, 0.0, "mean flush (A) or render (B) time on %s", inst)
			assert.Less(t, v, 1.0, "mean flush (A) or render (B) time on %s: a few hundred series", inst)
		}
	}
	scrapes := byLabel("Scrape latency", "A", all, "instance")
	require.Len(t, scrapes, 1, "only the RED metrics target is counted")
	assert.Contains(t, scrapes, metricsTarget)
	assert.Greater(t, scrapes[metricsTarget], 0.0)
	assert.Less(t, scrapes[metricsTarget], 2.0, "scrape of a few hundred series")
	drops := byLabel("Hotspotfilter drops", "A", all, "service_name")
	assert.Greater(t, drops["cart"], 0.0, "cart's Redis spans over budget are dropped")
	assert.NotContains(t, drops, "checkout", "checkout has no Redis spans")
	lagNames, err := prom.query(`count by (__name__) ({__name__=~"otelcol_kafka_receiver_offset_lag.*"})`)
	require.NoError(t, err)
	for _, s := range lagNames {
		t.Logf("Kafka lag exposed as %s", s.Metric["__name__"])
	}
	lag := byLabel("Kafka consumer lag", "A", all, "topic")
	assert.Contains(t, lag, topic)
	assert.GreaterOrEqual(t, lag[topic], 0.0)

	// Exemplars: trace IDs ride on the OpenMetrics exposition Prometheus can store them from.
	assertExemplars(t, g.metricsURL)

	if dir := os.Getenv("DEPLOY_CHARTS_DIR"); dir != "" {
		// A few minutes of load, so the 5m rates of the picture fill their window.
		time.Sleep(time.Until(loadStart.Add(deployChartLoad)))
		writeDashboardCharts(t, prom, panels, dir, loadStart)
	}
}

// assertExemplars asks the metrics endpoint for OpenMetrics and checks that RED data points carry
// exemplars with a trace_id.
func assertExemplars(t *testing.T, metricsURL string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, metricsURL, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0")
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, resp.Header.Get("Content-Type"), "application/openmetrics-text")
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "traces_span_metrics_duration_milliseconds_bucket") && strings.Contains(line, " # {") && strings.Contains(line, `trace_id="`) {
			n++
		}
	}
	assert.Positive(t, n, "duration buckets with a trace_id exemplar")
}

// writeDashboardCharts draws every time-series panel over the load into dir/dashboard.png.
func writeDashboardCharts(t *testing.T, prom promAPI, panels []panel, dir string, start time.Time) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	all := map[string]string{"service": "checkout|cart|ids", "span_kind": "SPAN_KIND_SERVER"}
	units := map[string]string{
		"Rate": "calls/s", "Error ratio": "ratio", "Latency p50 / p95 / p99": "ms",
		"Latency p99 with exemplars": "ms", "Ingest rate": "spans/s", "Series": "series",
		"Overflow and dropped points": "per s", "Ring depth": "batches",
		"Refused scrapes and skipped flushes": "per s", "Flush and render duration": "s",
		"Scrape latency": "s", "Hotspotfilter drops": "spans/s", "Kafka consumer lag": "records",
		"Top 10 span names by rate": "calls/s", "Top 10 span names by errors": "errors/s",
	}
	end := time.Now()
	var charts []chartPanel
	for _, p := range panels {
		cp := chartPanel{title: p.Title, unit: units[p.Title], series: map[string][][2]float64{}}
		for _, tg := range p.Targets {
			res, err := prom.queryRange(grafanaExpand(tg.Expr, all, "30s"), start, end, 2*time.Second)
			require.NoError(t, err, p.Title)
			for _, s := range res {
				name := legendOf(p, tg.RefID, s.Metric)
				for _, v := range s.Values {
					ts, _ := v[0].(float64)
					val := parsePromValue(v[1])
					if math.IsNaN(val) || math.IsInf(val, 0) {
						continue
					}
					cp.series[name] = append(cp.series[name], [2]float64{ts - float64(start.Unix()), val})
				}
			}
		}
		charts = append(charts, cp)
	}
	path := filepath.Join(dir, "dashboard.png")
	require.NoError(t, writeDashboardPNG(path, charts))
	t.Logf("dashboard panels drawn into %s", path)
}

// legendOf names a series as the panel's legendFormat would, falling back to the query's refId.
func legendOf(p panel, ref string, m map[string]string) string {
	for _, tg := range p.Targets {
		if tg.RefID == ref && tg.Legend != "" {
			if l := legend(tg.Legend, m); l != "" {
				return l
			}
		}
	}
	return ref
}
