//go:build integration

package e2e

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestNativeHistogramsInPrometheus3 runs configs/native-histograms.yaml and a real Prometheus 3
// with scrape_native_histograms, sends spans of known durations, and reads back through PromQL:
// the duration is stored as a native histogram (no classic _bucket series), histogram_count is
// the spans sent, histogram_sum their durations, and histogram_quantile(0.99) is within the
// schema's bucket width of the true p99 of the durations sent.
func TestNativeHistogramsInPrometheus3(t *testing.T) {
	env, metricsURL := defaultEnv(t)
	StartCollector(t, configPath("native-histograms.yaml"), env)

	prom := startPrometheus(t, "prometheus3", fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: red
    scrape_native_histograms: true
    static_configs: [{targets: [%q]}]
`, scrapeTarget(metricsURL)))

	durations := sendKnownDurations(t, env["OTLP_GRPC_ENDPOINT"])
	const sel = `traces_span_metrics_duration_milliseconds{service_name="native"}`
	var got []promSample
	require.True(t, waitFor(90*time.Second, func() bool {
		var err error
		got, err = prom.query(`sum by (span_name) (histogram_count(` + sel + `))`)
		if err != nil || len(got) != len(durations) {
			return false
		}
		for _, s := range got {
			if s.value() != float64(len(durations[s.Metric["span_name"]])) {
				return false
			}
		}
		return true
	}), "histogram_count per span name = spans sent; last: %v", got)

	raw, err := prom.query(sel)
	require.NoError(t, err)
	require.Len(t, raw, len(durations))
	for _, s := range raw {
		require.NotEmpty(t, s.Histogram, "%v is stored as a native histogram", s.Metric)
	}
	classic, err := prom.query(`traces_span_metrics_duration_milliseconds_bucket{service_name="native"}`)
	require.NoError(t, err)
	require.Empty(t, classic, "no classic bucket series")

	sums, err := prom.query(`sum by (span_name) (histogram_sum(` + sel + `))`)
	require.NoError(t, err)
	require.Len(t, sums, len(durations))
	for _, s := range sums {
		want := 0.0
		for _, d := range durations[s.Metric["span_name"]] {
			want += d
		}
		require.InEpsilon(t, want, s.value(), 1e-9, "histogram_sum of %s", s.Metric["span_name"])
	}

	p99s, err := prom.query(`histogram_quantile(0.99, sum by (span_name) (` + sel + `))`)
	require.NoError(t, err)
	require.Len(t, p99s, len(durations))
	for _, s := range p99s {
		ds := durations[s.Metric["span_name"]]
		sort.Float64s(ds)
		want := ds[int(math.Ceil(0.99*float64(len(ds))))-1]
		// Durations of 1 ms to 1 s fit 160 buckets at scale 4 (10 doublings × 16); bound by
		// scale 2's width (19%) so the test does not depend on how the scale was chosen.
		require.InEpsilon(t, want, s.value(), math.Pow(2, 0.25)-1, "p99 of %s", s.Metric["span_name"])
		t.Logf("%s: p99 %.3f ms, true %.3f ms", s.Metric["span_name"], s.value(), want)
	}
}

// sendKnownDurations sends spans of service "native" whose durations spread log-uniformly over
// 1 ms to 1 s, and returns the durations sent, in milliseconds, by span name.
func sendKnownDurations(t *testing.T, endpoint string) map[string][]float64 {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	r := rand.New(rand.NewPCG(7, 11))
	names := []string{"GET /a", "GET /b", "POST /c"}
	out := map[string][]float64{}
	end := time.Now()
	for req := 0; req < 20; req++ {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "native")
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		for i := 0; i < 500; i++ {
			name := names[i%len(names)]
			// Whole microseconds, so the nanosecond timestamps hold the duration exactly.
			us := math.Round(1000 * math.Pow(1000, r.Float64()))
			d := time.Duration(us) * time.Microsecond
			s := spans.AppendEmpty()
			s.SetName(name)
			s.SetKind(ptrace.SpanKindServer)
			s.SetStartTimestamp(pcommon.NewTimestampFromTime(end.Add(-d)))
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
			out[name] = append(out[name], float64(d)/float64(time.Millisecond))
		}
		_, err := client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
		require.NoError(t, err, "request %d", req)
	}
	return out
}
