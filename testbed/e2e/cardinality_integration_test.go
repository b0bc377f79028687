//go:build integration

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestMillionUniqueSpanNames sends a million spans, each with a span name never seen before (a
// client putting IDs in span names), to the binary with configs/default.yaml and max_series
// lowered to 10,000. The first 10,000 names get their series; every later span goes to the
// resource's otel.metric.overflow=true series of its span kind and status code, so the calls
// still add up to exactly a million, and the process' memory stays that of 10,000 series
// instead of growing with every name.
func TestMillionUniqueSpanNames(t *testing.T) {
	const (
		maxSeries = 10_000
		requests  = 1000
		perReq    = 1000
		total     = requests * perReq
	)
	env, metricsURL := defaultEnv(t)
	c := StartCollector(t, configPath("default.yaml"), env,
		overlayFiles(t, "connectors:\n  tracemetrics:\n    max_series: "+strconv.Itoa(maxSeries)+"\n")...)

	sendUniqueSpanNames(t, env["OTLP_GRPC_ENDPOINT"], requests, perReq)

	calls := "traces_span_metrics_calls_total"
	all := map[string]string{} // this collector received nothing else
	require.Equal(t, float64(total), WaitForSum(t, metricsURL, calls, all, total, 2*time.Minute), "calls, overflow included")
	fams := Scrape(t, metricsURL)
	// The overflow series of max_series keeps the service, span kind and status code.
	overflow, n := SumSeries(fams, calls, map[string]string{"otel_metric_overflow": "true"})
	require.Equal(t, 1, n, "one overflow series")
	require.Equal(t, float64(total-maxSeries), overflow, "every span past max_series is in the overflow series")
	_, n = SumSeries(fams, calls, map[string]string{"otel_metric_overflow": "true", "service_name": "ids-in-names",
		"span_kind": "SPAN_KIND_SERVER", "status_code": "STATUS_CODE_UNSET"})
	require.Equal(t, 1, n, "the overflow series is labelled with the service, span kind and status code")
	serviceCalls, series := SumSeries(fams, calls, map[string]string{"service_name": "ids-in-names"})
	require.Equal(t, maxSeries+1, series, "series with a span name: max_series of them, and the overflow series")
	require.Equal(t, float64(maxSeries), serviceCalls-overflow, "one span each")

	rss := residentBytes(t, c.cmd.Process.Pid)
	t.Logf("collector RSS after a million span names: %d MiB", rss>>20)
	require.Less(t, rss, int64(512<<20), "memory bounded by max_series, not by the names sent (138 MiB measured)")
}

// TestCachedpromCapKeepsTotals is the other cap: tracemetrics holds every series and cachedprom's
// max_series, lowered, is the one reached. Points beyond it go to the family's overflow series, so
// the calls on /metrics still add up to every span sent, and the duration histogram's count too.
func TestCachedpromCapKeepsTotals(t *testing.T) {
	const (
		promCap  = 5_000
		requests = 100
		perReq   = 1000
		total    = requests * perReq
	)
	env, metricsURL := defaultEnv(t)
	StartCollector(t, configPath("default.yaml"), env, overlayFiles(t, fmt.Sprintf(
		"connectors:\n  tracemetrics:\n    max_series: %d\n    max_series_per_service: 0\nexporters:\n  cachedprom:\n    max_series: %d\n", 2*total, promCap))...)

	sendUniqueSpanNames(t, env["OTLP_GRPC_ENDPOINT"], requests, perReq)

	all := map[string]string{}
	require.Equal(t, float64(total), WaitForSum(t, metricsURL, callsFamily, all, total, 2*time.Minute), "calls, overflow included")
	fams := Scrape(t, metricsURL)
	count, _ := SumSeries(fams, durationFamily, all)
	require.Equal(t, float64(total), count, "duration count, overflow included")
	overflow, n := SumSeries(fams, callsFamily, map[string]string{"otel_metric_overflow": "true"})
	require.Equal(t, 1, n, "one overflow series of calls")
	named, held := SumSeries(fams, callsFamily, map[string]string{"service_name": "ids-in-names"})
	t.Logf("cachedprom max_series %d: %d named calls series (%v calls), overflow %v calls", promCap, held, named, overflow)
	require.LessOrEqual(t, held, promCap, "named series within cachedprom's cap")
	require.Equal(t, float64(total), named+overflow, "named and overflow calls add up to the spans sent")
	adjusted, _ := SumSeries(Scrape(t, telemetryURLOf(env)), "otelcol_exporter_cachedprom_adjusted_points_total", map[string]string{"reason": "overflow"})
	require.Positive(t, adjusted, `adjusted_points{reason="overflow"}`)
}

// sendUniqueSpanNames sends requests × perReq SERVER spans of service ids-in-names over OTLP gRPC,
// each with a span name never sent before ("GET /orders/<n>").
func sendUniqueSpanNames(t *testing.T, endpoint string, requests, perReq int) {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	now := time.Now()
	for r := 0; r < requests; r++ {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "ids-in-names")
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		spans.EnsureCapacity(perReq)
		for i := 0; i < perReq; i++ {
			n := r*perReq + i
			s := spans.AppendEmpty()
			s.SetName("GET /orders/" + strconv.Itoa(n))
			s.SetKind(ptrace.SpanKindServer)
			s.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Millisecond)))
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
		}
		_, err := client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
		require.NoError(t, err, "request %d", r)
	}
}

// residentBytes reads a process' resident set size from /proc.
func residentBytes(t *testing.T, pid int) int64 {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/<pid>/status")
	return 0
}

// sendNamed sends one request of service with the spans of names, n each, over client.
func sendNamed(client ptraceotlp.GRPCClient, service string, names []string, n int) error {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", service)
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	now := time.Now()
	for _, name := range names {
		for range n {
			s := spans.AppendEmpty()
			s.SetName(name)
			s.SetKind(ptrace.SpanKindServer)
			s.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Millisecond)))
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
	return err
}

// TestBusiestOperationsGetTheirSeries runs configs/default.yaml with max_series lowered to 5000
// and flushes every second. Service steady sends 10 operations from the start; then 50,000 span
// names that each come once fill the cap (service ids); then service shop starts 50 operations
// at a steady rate (20 spans a second each), long after the cap is full. With the busiest series kept (cap_selection by
// traffic, the default) each of shop's operations gets its own series within a few flushes, the
// ID names stay in the overflow series, steady's series are never touched, and the calls of every
// service, named and overflow together, equal the spans sent.
func TestBusiestOperationsGetTheirSeries(t *testing.T) {
	const maxSeries, noise, ops, perTick = 5000, 50_000, 50, 2
	env, metricsURL := defaultEnv(t)
	StartCollector(t, configPath("default.yaml"), env,
		overlayFiles(t, "connectors:\n  tracemetrics:\n    max_series: "+strconv.Itoa(maxSeries)+"\n")...)
	conn, err := grpc.NewClient(env["OTLP_GRPC_ENDPOINT"], grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)

	steadyNames := make([]string, 10)
	for i := range steadyNames {
		steadyNames[i] = fmt.Sprintf("steady-%d", i)
	}
	shopNames := make([]string, ops)
	for i := range shopNames {
		shopNames[i] = fmt.Sprintf("GET /shop/op-%02d", i)
	}
	calls := "traces_span_metrics_calls_total"
	sent := map[string]int{}
	require.NoError(t, sendNamed(client, "steady", steadyNames, 10))
	sent["steady"] += 10 * len(steadyNames)
	sendUniqueSpanNames(t, env["OTLP_GRPC_ENDPOINT"], noise/1000, 1000)
	sent["ids-in-names"] += noise
	// The receiver acknowledges before the aggregator counts, so on a slow host the tail of
	// the ID burst could still be counted in shop's first intervals, where the sketch ranks
	// it with shop's operations. Shop starts once every ID span is on the page, in an
	// interval after the burst's.
	require.Equal(t, float64(noise), WaitForSum(t, metricsURL, calls, map[string]string{"service_name": "ids-in-names"}, float64(noise), time.Minute),
		"calls of the ID burst before shop starts")

	// shop and steady send every 100 ms (20 spans a second per operation) while the main
	// goroutine scrapes.
	var mu sync.Mutex
	var sendErr error
	stop, stopped := make(chan struct{}), make(chan struct{})
	flushes := func() float64 {
		n, _ := SumSeries(Scrape(t, telemetryURLOf(env)), "otelcol_connector_tracemetrics_flushes_total", nil)
		return n
	}
	flushesAtStart := flushes()
	shopStart := time.Now()
	go func() {
		defer close(stopped)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			err := errors.Join(sendNamed(client, "shop", shopNames, perTick), sendNamed(client, "steady", steadyNames, 1))
			mu.Lock()
			if err != nil {
				sendErr = err
				mu.Unlock()
				return
			}
			sent["shop"] += ops * perTick
			sent["steady"] += len(steadyNames)
			mu.Unlock()
		}
	}()
	ownSeriesAt := map[string]time.Duration{}
	var flushesTaken float64
	for time.Since(shopStart) < 15*time.Second && len(ownSeriesAt) < ops {
		flushesTaken = flushes() - flushesAtStart
		// Only the calls lines are read, so each pass takes a fraction of the flush interval
		// and the flush it reads is the one whose render the scrape shows, or the next.
		seen, err := scrapeFamilyLines(metricsURL, calls, 30*time.Second)
		require.NoError(t, err)
		for labels, v := range seen {
			if v == 0 || !strings.Contains(labels, `service_name="shop"`) {
				continue
			}
			for _, name := range shopNames {
				if _, ok := ownSeriesAt[name]; !ok && strings.Contains(labels, `span_name="`+name+`"`) {
					ownSeriesAt[name] = time.Since(shopStart)
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	<-stopped
	require.NoError(t, sendErr)
	var latest time.Duration
	for _, at := range ownSeriesAt {
		latest = max(latest, at)
	}

	t.Logf("%d of %d shop operations got their own series, the last %s and at most %.0f flushes after shop started (flush every 1 s)",
		len(ownSeriesAt), ops, latest.Round(100*time.Millisecond), flushesTaken)
	require.Len(t, ownSeriesAt, ops, "shop operations with their own series")
	// The interval shop starts in, the first whole one, which ranks the operations as the
	// busiest (promoted at its flush: within two intervals), the one that creates their
	// series; the flushes are counted before each scrape, and cachedprom renders a flush
	// once it has all come, so the next flush may be counted before its render is seen.
	require.LessOrEqual(t, flushesTaken, 4.0, "flushes until every operation had its series")

	for svc, n := range sent {
		got := WaitForSum(t, metricsURL, calls, map[string]string{"service_name": svc}, float64(n), time.Minute)
		require.Equal(t, float64(n), got, "calls of %s, named and overflow", svc)
	}
	fams := Scrape(t, metricsURL)
	named, series := SumSeries(fams, calls, map[string]string{"service_name": "steady", "otel_metric_overflow": ""})
	require.Equal(t, len(steadyNames), series, "steady's series")
	require.Equal(t, float64(sent["steady"]), named, "steady counted in its own series only")
	_, idsNamed := SumSeries(fams, calls, map[string]string{"service_name": "ids-in-names", "otel_metric_overflow": ""})
	require.Less(t, idsNamed, maxSeries, "the ID names keep fewer than the cap: shop's operations took their places")
	own := Scrape(t, telemetryURLOf(env))
	promoted, _ := SumSeries(own, "otelcol_connector_tracemetrics_promoted_series_total", nil)
	require.GreaterOrEqual(t, promoted, float64(ops), "promoted series")
}

// TestCardinalityConfigNamesByTemplate runs configs/cardinality.yaml as shipped: span names with
// IDs in them are counted under their template (the clustering layer), spans with an http.route
// under the name the semantic conventions give, a tenant prefix is cut by the shipped rule, and
// every span is counted once.
func TestCardinalityConfigNamesByTemplate(t *testing.T) {
	env, metricsURL := defaultEnv(t)
	StartCollector(t, configPath("cardinality.yaml"), env)
	conn, err := grpc.NewClient(env["OTLP_GRPC_ENDPOINT"], grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)

	const ids = 1000
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "orders")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	now := time.Now()
	add := func(name string) ptrace.Span {
		s := spans.AppendEmpty()
		s.SetName(name)
		s.SetKind(ptrace.SpanKindServer)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Millisecond)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
		return s
	}
	for i := range ids {
		add(fmt.Sprintf("GET /orders/%d", 10_000+i))
		s := add(fmt.Sprintf("POST /carts/%d", 10_000+i))
		s.Attributes().PutStr("http.request.method", "POST")
		s.Attributes().PutStr("http.route", "/carts/:cart")
		add(fmt.Sprintf("tenant-%x GET /health", i%7))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
	require.NoError(t, err)

	calls := "traces_span_metrics_calls_total"
	require.Equal(t, float64(3*ids), WaitForSum(t, metricsURL, calls, map[string]string{"service_name": "orders"}, 3*ids, time.Minute))
	fams := Scrape(t, metricsURL)
	for name, want := range map[string]float64{
		"GET /orders/{id}":  ids, // clustering: a number is an ID
		"POST /carts/:cart": ids, // semantic conventions: method and route
		"GET /health":       ids, // the shipped rule cuts the tenant prefix
	} {
		got, n := SumSeries(fams, calls, map[string]string{"service_name": "orders", "span_name": name})
		require.Equal(t, 1, n, "series named %q", name)
		require.Equal(t, want, got, "calls of %q", name)
	}
	_, n := SumSeries(fams, calls, map[string]string{"service_name": "orders"})
	require.Equal(t, 3, n, "series of service orders")
}

// TestUniqueNameChurnStaysBounded runs configs/default.yaml with max_series lowered to 10,000
// under a stream of span names that each come once (a million a minute), for 60 s, or for
// $OTELCOL_RED_NAME_CHURN (make test-name-churn-full: 10 minutes): the resident memory of the
// second half of the run is no higher than that of the first (after a warm-up), the series held
// never pass the cap and its overflow series, and every span sent is counted.
func TestUniqueNameChurnStaysBounded(t *testing.T) {
	const maxSeries = 10_000
	run := churnDuration(t, "OTELCOL_RED_NAME_CHURN")
	env, metricsURL := defaultEnv(t)
	// Slots freed by idle series go to whichever names come next, each holding its one span;
	// cachedprom keeps every series longer than the run, so the calls on /metrics still add up
	// to every span sent at the end (with its default 5 minutes, a 10-minute run would see the
	// first ones expire, with their counts).
	c := StartCollector(t, configPath("default.yaml"), env,
		overlayFiles(t, fmt.Sprintf("connectors:\n  tracemetrics:\n    max_series: %d\nexporters:\n  cachedprom:\n    metric_expiration: %s\n",
			maxSeries, run+10*time.Minute))...)
	series := "otelcol_connector_tracemetrics_series"
	var maxHeld float64
	st := streamChurn(t, env["OTLP_GRPC_ENDPOINT"], c, run, uniqueNames, func(since time.Duration) {
		held, _ := SumSeries(Scrape(t, telemetryURLOf(env)), series, nil)
		maxHeld = max(maxHeld, held)
		require.LessOrEqual(t, held, float64(maxSeries+10), "series held at %s", since.Round(time.Second))
	})
	t.Logf("%d spans of names seen once in %s; at most %.0f series held; RSS max %d MiB in the first half, %d MiB in the second",
		st.sent, run, maxHeld, st.firstHalfRSS>>20, st.secondHalfRSS>>20)
	st.requireFlat(t)
	got := WaitForSum(t, metricsURL, "traces_span_metrics_calls_total", map[string]string{"service_name": "churn"}, float64(st.sent), time.Minute)
	require.Equal(t, float64(st.sent), got, "calls, named and overflow")
}

// uniqueNames is request seq of TestUniqueNameChurnStaysBounded: churnPerRequest SERVER spans of
// service churn, each with a name no other span has.
// TestUniqueNameChurnStaysBoundedWithLayers is TestUniqueNameChurnStaysBounded through
// configs/cardinality.yaml, every layer on, with names clustering cannot fold: one word of
// letters each (a root position of the template tree, which never merges), so every name is a
// new template and the learner evicts at max_templates_per_service for the whole run. The
// same bounds hold, and the templates held never pass their bound.
func TestUniqueNameChurnStaysBoundedWithLayers(t *testing.T) {
	const maxSeries, maxTemplates = 10_000, 500 // max_templates_per_service's default
	run := churnDuration(t, "OTELCOL_RED_NAME_CHURN")
	env, metricsURL := defaultEnv(t)
	env["MAX_SERIES"] = strconv.Itoa(maxSeries)
	env["MAX_SERIES_PER_SERVICE"] = strconv.Itoa(maxSeries)
	c := StartCollector(t, configPath("cardinality.yaml"), env,
		overlayFiles(t, fmt.Sprintf("exporters:\n  cachedprom:\n    metric_expiration: %s\n", run+10*time.Minute))...)
	telemetry := telemetryURLOf(env)
	var maxHeld, maxTemplatesHeld float64
	st := streamChurn(t, env["OTLP_GRPC_ENDPOINT"], c, run, uniqueWords, func(since time.Duration) {
		page := Scrape(t, telemetry)
		held, _ := SumSeries(page, "otelcol_connector_tracemetrics_series", nil)
		templates, n := SumSeries(page, "otelcol_connector_tracemetrics_span_name_templates", nil)
		require.Positive(t, n, "span_name_templates on the telemetry page")
		maxHeld, maxTemplatesHeld = max(maxHeld, held), max(maxTemplatesHeld, templates)
		require.LessOrEqual(t, held, float64(maxSeries+10), "series held at %s", since.Round(time.Second))
		require.LessOrEqual(t, templates, float64(maxTemplates+1), "templates held at %s", since.Round(time.Second))
	})
	t.Logf("%d spans of names seen once in %s; at most %.0f series and %.0f templates held; RSS max %d MiB in the first half, %d MiB in the second",
		st.sent, run, maxHeld, maxTemplatesHeld, st.firstHalfRSS>>20, st.secondHalfRSS>>20)
	require.Positive(t, maxTemplatesHeld, "clustering learned the names")
	st.requireFlat(t)
	got := WaitForSum(t, metricsURL, "traces_span_metrics_calls_total", map[string]string{"service_name": "churn"}, float64(st.sent), time.Minute)
	require.Equal(t, float64(st.sent), got, "calls, named and overflow")
}

// uniqueWords is uniqueNames with names of one word of letters, which no ID heuristic takes.
func uniqueWords(seq int, now time.Time) ptrace.Traces {
	td := uniqueNames(seq, now)
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := range spans.Len() {
		n := seq*churnPerRequest + i
		b := []byte("op")
		for {
			b = append(b, byte('a'+n%26))
			if n /= 26; n == 0 {
				break
			}
		}
		spans.At(i).SetName(string(b))
	}
	return td
}

func uniqueNames(seq int, now time.Time) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "churn")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	spans.EnsureCapacity(churnPerRequest)
	for i := range churnPerRequest {
		s := spans.AppendEmpty()
		s.SetName("GET /sessions/" + strconv.Itoa(seq*churnPerRequest+i))
		s.SetKind(ptrace.SpanKindServer)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Millisecond)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
	}
	return td
}
