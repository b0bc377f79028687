//go:build integration

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/otelcol-red/otelcol-red/internal/testservice"
)

// defaultEnv moves every endpoint of configs/default.yaml to a free port.
func defaultEnv(t *testing.T) (map[string]string, string) {
	metrics := freeAddr(t)
	return map[string]string{
		"OTLP_GRPC_ENDPOINT":     freeAddr(t),
		"OTLP_HTTP_ENDPOINT":     freeAddr(t),
		"METRICS_ENDPOINT":       metrics,
		"HEALTH_ENDPOINT":        freeAddr(t),
		"TELEMETRY_PORT":         portOf(freeAddr(t)),
		"METRICS_FLUSH_INTERVAL": "1s",
	}, "http://" + metrics + "/metrics"
}

// telemetryURLOf is the collector's own metrics endpoint for an environment of defaultEnv.
func telemetryURLOf(env map[string]string) string {
	return "http://127.0.0.1:" + env["TELEMETRY_PORT"] + "/metrics"
}

// TestDefaultConfigServesREDMetrics is `make run`'s contract: one OTLP trace sent with a real
// gRPC client makes RED metrics appear at the metrics endpoint.
func TestDefaultConfigServesREDMetrics(t *testing.T) {
	env, metricsURL := defaultEnv(t)
	StartCollector(t, configPath("default.yaml"), env)

	conn, err := grpc.NewClient(env["OTLP_GRPC_ENDPOINT"], grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	td := checkoutTrace(1)
	_, err = ptraceotlp.NewGRPCClient(conn).Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
	require.NoError(t, err)

	calls := "traces_span_metrics_calls_total"
	got := WaitForSum(t, metricsURL, calls, map[string]string{"service_name": "checkout", "span_name": "GET /cart"}, 2, 30*time.Second)
	require.Equal(t, 2.0, got, "calls of GET /cart")
	fams := Scrape(t, metricsURL)
	errCalls, n := SumSeries(fams, calls, map[string]string{"span_name": "POST /pay", "status_code": "STATUS_CODE_ERROR"})
	require.Equal(t, 1, n)
	require.Equal(t, 1.0, errCalls)
	durCount, _ := SumSeries(fams, "traces_span_metrics_duration_milliseconds", map[string]string{"service_name": "checkout"})
	require.Equal(t, 3.0, durCount, "duration histogram count")
}

// TestEveryConfigValidates runs `otelcol-red validate` on every file in configs/ (an overlay over
// the config its head names).
func TestEveryConfigValidates(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testservice.Root(), "configs", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			args := []string{"validate", "--config=" + f}
			if base := overlayBase(t, f); base != "" {
				args = []string{"validate", "--config=" + filepath.Join(filepath.Dir(f), base), "--config=" + f}
			}
			cmd := exec.Command(binaryPath(t), args...)
			cmd.Env = append(os.Environ(), "OTELCOL_RED_STORAGE_DIR="+t.TempDir())
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, string(out))
		})
	}
}

// TestComponentsListed checks that the binary carries every component of the manifest.
func TestComponentsListed(t *testing.T) {
	out, err := exec.Command(binaryPath(t), "components").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, name := range []string{
		"otlp", "kafka", "otlpwire", // receivers (kafka is also an exporter; nop is both)
		"batch", "memory_limiter", "filter", "attributes", "resource", "transform", "groupbyattrs",
		// spanmetrics and servicegraph are listed by their names since v0.165 (the old ones
		// remain accepted as aliases in configs: TestEveryConfigValidates runs configs using them).
		"span_metrics", "service_graph", "forward", "nop",
		"otlp_grpc", "otlp_http", "debug", "prometheus", "elasticsearch",
		"health_check", "pprof", "zpages", "file_storage", "gcheadroom", "otlpwire_encoding",
		"tracemetrics", "tracegraph", "hotspotfilter", "cachedprom", "kafkaaffinity",
	} {
		require.Contains(t, string(out), "- name: "+name+"\n", "component %q missing", name)
	}
}

// TestConfigErrorsExitNonZero: a mistake in the YAML gets the collector's clear message and a
// non-zero exit, for validate and for a real start.
func TestConfigErrorsExitNonZero(t *testing.T) {
	cases := map[string]struct {
		yaml string
		want string
		// validate only decodes and validates; an endpoint is resolved when the receiver starts.
		startOnly bool
	}{
		"unknown key": {
			yaml: strings.Replace(readConfig(t, "default.yaml"), "    check_interval: 1s", "    check_interval: 1s\n    no_such_key: 1", 1),
			want: "has invalid keys: no_such_key",
		},
		"bad endpoint": {
			yaml:      readConfig(t, "default.yaml"),
			want:      `failed to start "otlpwire" receiver`,
			startOnly: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "config.yaml")
			require.NoError(t, os.WriteFile(f, []byte(tc.yaml), 0o600))
			runs := [][]string{{"validate", "--config=" + f}, {"--config=" + f}}
			if tc.startOnly {
				runs = runs[1:]
			}
			for _, args := range runs {
				cmd := exec.Command(binaryPath(t), args...)
				env, _ := defaultEnv(t)
				cmd.Env = os.Environ()
				for k, v := range env {
					cmd.Env = append(cmd.Env, k+"="+v)
				}
				if name == "bad endpoint" {
					cmd.Env = append(cmd.Env, "OTLP_GRPC_ENDPOINT=OTLP_GRPC_ENDPOINT_IS_BAD:99999")
				}
				done := make(chan struct{})
				var out []byte
				var err error
				go func() { out, err = cmd.CombinedOutput(); close(done) }()
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					_ = cmd.Process.Kill()
					<-done
					t.Fatalf("%v: still running after 30s, expected a config error", args)
				}
				require.Error(t, err, "%v must exit non-zero:\n%s", args, out)
				require.Contains(t, string(out), tc.want, "%v", args)
			}
		})
	}
}

func readConfig(t *testing.T, name string) string {
	b, err := os.ReadFile(configPath(name))
	require.NoError(t, err)
	return string(b)
}
