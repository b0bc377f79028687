//go:build integration

package e2e

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/internal/testservice"
)

const (
	typedService   = "typed-status"
	typedDimension = "http.response.status_code"
	typedLabel     = "http_response_status_code"
)

// TestTypedAttributeValuesCountedOnce sends, with contrib's telemetrygen as the client, 3000
// traces whose spans carry the status code dimension as the integer 200 and 2000 traces where it
// is the string "200" (a parent and a child span each: 10,000 spans). OTLP keeps the two types
// apart, Prometheus labels do not: both render to http_response_status_code="200", and that one
// series must count every span once, in calls and in the duration histogram's count, through
// configs/default.yaml (delta points into cachedprom, and cumulative ones) as through the stock
// twin's job (spanmetrics + prometheus) on the same input.
func TestTypedAttributeValuesCountedOnce(t *testing.T) {
	tg, err := testservice.Run("telemetrygen", "path")
	require.NoError(t, err)
	const intTraces, strTraces = 3000, 2000
	const want = 2 * (intTraces + strTraces)
	for _, tc := range []struct {
		name, config, overlay string
	}{
		{"ours", "default.yaml", "connectors:\n  tracemetrics:\n    dimensions:\n      - name: " + typedDimension + "\n"},
		// Cumulative points: cachedprom adds each OTLP series' increase instead of keeping the last.
		{"ours-cumulative", "default.yaml", "connectors:\n  tracemetrics:\n    aggregation_temporality: AGGREGATION_TEMPORALITY_CUMULATIVE\n    dimensions:\n      - name: " + typedDimension + "\n"},
		{"stock", "stock-twin.yaml", "connectors:\n  spanmetrics:\n    dimensions:\n      - name: " + typedDimension + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, metricsURL := defaultEnv(t)
			StartCollector(t, configPath(tc.config), env, overlayFiles(t, tc.overlay)...)

			// key=200 is an int attribute for telemetrygen, key="200" a string one.
			runTelemetrygen(t, tg, env["OTLP_GRPC_ENDPOINT"], intTraces, typedDimension+"=200")
			runTelemetrygen(t, tg, env["OTLP_GRPC_ENDPOINT"], strTraces, typedDimension+`="200"`)

			labels := map[string]string{"service_name": typedService}
			var calls, count float64
			var series int
			counted := waitFor(60*time.Second, func() bool {
				fams, err := scrape(metricsURL)
				if err != nil {
					return false
				}
				calls, series = SumSeries(fams, callsFamily, labels)
				count, _ = SumSeries(fams, durationFamily, labels)
				return calls >= want && count >= want
			})
			t.Logf("%s: %.0f calls and %.0f durations counted of %d spans sent, in %d calls series", tc.name, calls, count, want, series)
			require.True(t, counted, "%s: %.0f calls and %.0f durations of %d spans sent", tc.name, calls, count, want)
			assert.Equal(t, float64(want), calls, "calls: every span once")
			assert.Equal(t, float64(want), count, "duration count: every span once")

			fams := Scrape(t, metricsURL)
			with200, _ := SumSeries(fams, callsFamily, map[string]string{"service_name": typedService, typedLabel: "200"})
			assert.Equal(t, float64(want), with200, `every span counted under %s="200"`, typedLabel)
		})
	}
}

// runTelemetrygen sends traces traces of a parent and one child span from
// service typedService with one span attribute.
func runTelemetrygen(t *testing.T, bin, endpoint string, traces int, attribute string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "traces",
		"--otlp-endpoint", endpoint, "--otlp-insecure",
		"--service", typedService,
		"--traces", strconv.Itoa(traces), "--child-spans", "1",
		// Paced: at full speed the client's own span queue (the SDK's batch processor) drops spans.
		"--rate", "2000", "--workers", "1",
		"--telemetry-attributes", attribute,
	).CombinedOutput()
	require.NoError(t, err, "telemetrygen: %s", tailOf(string(out), 2000))
}
