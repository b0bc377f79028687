//go:build integration

package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
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
		"connectors:\n  tracemetrics:\n    max_series: %d\nexporters:\n  cachedprom:\n    max_series: %d\n", 2*total, promCap))...)

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
