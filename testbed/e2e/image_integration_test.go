//go:build integration

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"

	"github.com/otelcol-red/otelcol-red/internal/testservice"
)

// The image tests run the image `make image` builds from the repository's Dockerfile (make test
// builds it first), with podman or docker through scripts/image.sh, on the host's network.

// imageName is what scripts/image.sh tags.
const imageName = "otelcol-red:latest"

// imageCmd runs `scripts/image.sh args...` and returns its output; a failure fails the test.
func imageCmd(t *testing.T, args ...string) string {
	t.Helper()
	out, err := testservice.Run("image", args...)
	require.NoError(t, err)
	return out
}

// container is one run of the image, removed (with its anonymous volume) when the test ends.
type container struct {
	name string
}

// runImage starts the image detached with the given environment and arguments.
func runImage(t *testing.T, env map[string]string, args ...string) *container {
	t.Helper()
	name := fmt.Sprintf("otelcol-red-test-%d", time.Now().UnixNano())
	run := []string{"run", "-d", "--name", name}
	for k, v := range env {
		run = append(run, "-e", k+"="+v)
	}
	run = append(run, imageName)
	run = append(run, args...)
	imageCmd(t, run...)
	c := &container{name: name}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := testservice.Run("image", "logs", name)
			t.Logf("container log:\n%s", tailOf(out, 4000))
		}
		_, _ = testservice.Run("image", "rm", "-f", "-v", name)
	})
	return c
}

// waitReady waits for the collector's readiness line in the container's log.
func (c *container) waitReady(t *testing.T) {
	t.Helper()
	ok := waitFor(60*time.Second, func() bool {
		out, err := testservice.Run("image", "logs", c.name)
		return err == nil && strings.Contains(out, readyLine)
	})
	require.True(t, ok, "the container did not get ready")
}

// uid reads the real uid of the container's main process from the host's /proc.
func (c *container) uid(t *testing.T) string {
	t.Helper()
	pid := imageCmd(t, "inspect", "--format", "{{.State.Pid}}", c.name)
	status, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	require.NoError(t, err)
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			return strings.Fields(rest)[0]
		}
	}
	t.Fatalf("no Uid line in /proc/%s/status", pid)
	return ""
}

// stop sends SIGTERM (podman/docker stop) and returns the exit code.
func (c *container) stop(t *testing.T) int {
	t.Helper()
	imageCmd(t, "stop", "-t", "60", c.name)
	code, err := strconv.Atoi(imageCmd(t, "inspect", "--format", "{{.State.ExitCode}}", c.name))
	require.NoError(t, err)
	return code
}

// imageEnv moves every endpoint of a shipped config to a free loopback port: the container
// shares the host's network, so the image's 0.0.0.0 defaults would collide with other tests.
func imageEnv(t *testing.T, flush string) (map[string]string, string) {
	env := map[string]string{
		"OTLP_GRPC_ENDPOINT":     freeAddr(t),
		"OTLP_HTTP_ENDPOINT":     freeAddr(t),
		"METRICS_ENDPOINT":       freeAddr(t),
		"HEALTH_ENDPOINT":        freeAddr(t),
		"TELEMETRY_PORT":         portOf(freeAddr(t)),
		"METRICS_FLUSH_INTERVAL": flush,
	}
	return env, "http://" + env["METRICS_ENDPOINT"] + "/metrics"
}

// TestImageCountsForeignSpansExactlyAsNonRoot runs the image with its default command's config
// (configs/default.yaml), sends spans with contrib's telemetrygen, a client that is not ours,
// and requires every span on /metrics, from a process running as uid 10001.
func TestImageCountsForeignSpansExactlyAsNonRoot(t *testing.T) {
	tg, err := testservice.Run("telemetrygen", "path")
	require.NoError(t, err)
	assert.Equal(t, "10001", imageCmd(t, "image", "inspect", "--format", "{{.Config.User}}", imageName), "the image's user")

	env, metricsURL := imageEnv(t, "1s")
	c := runImage(t, env) // the image's own CMD: --config=/etc/otelcol-red/default.yaml
	c.waitReady(t)
	assert.Equal(t, "10001", c.uid(t), "the collector's uid")

	const traces = 1500 // a parent and one child span each
	runTelemetrygen(t, tg, env["OTLP_GRPC_ENDPOINT"], traces, "image.test=true")
	got := WaitForSum(t, metricsURL, callsFamily, map[string]string{"service_name": typedService}, 2*traces, time.Minute)
	assert.Equal(t, float64(2*traces), got, "calls: every span once")
	count, _ := SumSeries(Scrape(t, metricsURL), durationFamily, map[string]string{"service_name": typedService})
	assert.Equal(t, float64(2*traces), count, "duration count: every span once")

	assert.Equal(t, 0, c.stop(t), "exit code after SIGTERM")
}

// metricsSink is an OTLP/gRPC metrics receiver that sums the calls points it gets.
type metricsSink struct {
	pmetricotlp.UnimplementedGRPCServer
	mu    sync.Mutex
	calls float64
}

func (s *metricsSink) Export(_ context.Context, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rms := req.Metrics().ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				if m.Name() == "traces.span.metrics.calls" && m.Type() == pmetric.MetricTypeSum {
					dps := m.Sum().DataPoints()
					for l := 0; l < dps.Len(); l++ {
						s.calls += float64(dps.At(l).IntValue())
					}
				}
			}
		}
	}
	return pmetricotlp.NewExportResponse(), nil
}

func (s *metricsSink) total() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// TestImageFlushesOnSIGTERM runs the image with a flush interval of an hour and, through the
// collector's own config merging, a second metrics exporter that sends OTLP to this test. The
// spans sent are accepted but never flushed on the timer: only the final flush of a graceful
// shutdown can deliver them, and SIGTERM must end the container with every one of them
// delivered.
func TestImageFlushesOnSIGTERM(t *testing.T) {
	sink := &metricsSink{}
	lis, err := net.Listen("tcp", freeAddr(t))
	require.NoError(t, err)
	srv := grpc.NewServer()
	pmetricotlp.RegisterGRPCServer(srv, sink)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	env, metricsURL := imageEnv(t, "1h")
	c := runImage(t, env,
		"--config=/etc/otelcol-red/default.yaml",
		"--config=yaml:exporters::otlp_grpc/final::endpoint: "+lis.Addr().String(),
		"--config=yaml:exporters::otlp_grpc/final::tls::insecure: true",
		"--config=yaml:service::pipelines::metrics/red::exporters: [cachedprom, otlp_grpc/final]",
	)
	c.waitReady(t)

	sender := newESOTLPSender(t, env["OTLP_HTTP_ENDPOINT"])
	const batches, perBatch = 20, 50
	for i := range batches {
		td, _ := esSpanBatch(uint64(time.Now().UnixNano()), i*perBatch, perBatch)
		require.NoError(t, sender.send(td))
	}
	fams := Scrape(t, metricsURL)
	before, _ := SumSeries(fams, callsFamily, nil)
	require.Zero(t, before, "nothing may be flushed before the shutdown (interval 1h)")
	require.Zero(t, sink.total())

	assert.Equal(t, 0, c.stop(t), "exit code after SIGTERM")
	assert.Equal(t, float64(batches*perBatch), sink.total(), "the final flush delivers every accepted span")
}

// TestImageGatewayQueueIsWritable runs the image with the Kafka gateway config (brokers and
// Elasticsearch unreachable: the queue is opened at start whether or not they answer). Its
// Elasticsearch sending queue lives on disk under /var/lib/otelcol-red, which uid 10001 must be
// able to write in the image's own volume.
func TestImageGatewayQueueIsWritable(t *testing.T) {
	env, _ := imageEnv(t, "15s")
	env["KAFKA_BROKERS"] = freeAddr(t)
	env["ES_ENDPOINT"] = "http://" + freeAddr(t)
	c := runImage(t, env, "--config=/etc/otelcol-red/kafka-gateway.yaml")
	c.waitReady(t)
	assert.Equal(t, "10001", c.uid(t))
	assert.Equal(t, 0, c.stop(t), "exit code after SIGTERM")

	out := t.TempDir()
	imageCmd(t, "cp", c.name+":/var/lib/otelcol-red/.", out)
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Contains(t, names, "exporter_elasticsearch__traces", "the queue's file, written by uid 10001 in the image's volume")
}
