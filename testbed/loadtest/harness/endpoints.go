package harness

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/otelcol-red/otelcol-red/internal/freeport"
)

// ReadyTimeout bounds collector start-up: the wait for its health check and metrics endpoint.
const ReadyTimeout = time.Minute

// FlushEnv is the environment every config under test reads its connector's flush interval from.
const FlushEnv = "METRICS_FLUSH_INTERVAL"

// Endpoints are the addresses one collector serves on, free ports picked for it so that several
// collectors and several runs share one host. The configs read them from the environment (Env).
type Endpoints struct {
	OTLPGRPC, OTLPHTTP, Metrics, Health string
	TelemetryPort                       int
}

// NewEndpoints picks free ports for a collector.
func NewEndpoints() (Endpoints, error) {
	ports, err := FreePorts(5)
	if err != nil {
		return Endpoints{}, err
	}
	addr := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	return Endpoints{
		OTLPGRPC: addr(ports[0]), OTLPHTTP: addr(ports[1]), Metrics: addr(ports[2]), Health: addr(ports[3]),
		TelemetryPort: ports[4],
	}, nil
}

// Env is the environment that hands the endpoints to the collector's config.
func (e Endpoints) Env() map[string]string {
	return map[string]string{
		"OTLP_GRPC_ENDPOINT": e.OTLPGRPC,
		"OTLP_HTTP_ENDPOINT": e.OTLPHTTP,
		"METRICS_ENDPOINT":   e.Metrics,
		"HEALTH_ENDPOINT":    e.Health,
		"TELEMETRY_PORT":     strconv.Itoa(e.TelemetryPort),
	}
}

// MetricsURL is the Prometheus endpoint of the RED metrics.
func (e Endpoints) MetricsURL() string { return "http://" + e.Metrics + "/metrics" }

// HealthURL is the health check.
func (e Endpoints) HealthURL() string { return "http://" + e.Health + "/" }

// TelemetryURL is the collector's own telemetry.
func (e Endpoints) TelemetryURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", e.TelemetryPort)
}

// FreePorts returns n distinct free ports from below the ephemeral range, where the load
// generator's and the collectors' own client sockets cannot take them before a collector binds.
func FreePorts(n int) ([]int, error) {
	addrs, err := freeport.Addrs(n)
	if err != nil {
		return nil, err
	}
	ports := make([]int, n)
	for i, a := range addrs {
		_, p, _ := net.SplitHostPort(a)
		if ports[i], err = strconv.Atoi(p); err != nil {
			return nil, err
		}
	}
	return ports, nil
}
