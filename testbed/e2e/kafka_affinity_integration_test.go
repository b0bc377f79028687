//go:build integration

package e2e

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/testbed/datasenders"
)

// stockAgentOverlay turns configs/agent.yaml into the same agent with the stock kafka exporter
// keyed by trace ID, its one keying option for traces: every partition carries every service.
// Not keyless: records without a key go through franz-go's sticky partitioner, which keeps a
// partition until a producer batch is sent, so the agent's few large batched records may all land
// on the partitions of one or two gateways, depending on timing. That made the stock ratio a
// matter of luck (a slow machine sends fewer, larger batches); a trace-ID hash spreads the
// records by content instead, the same way on every machine.
const stockAgentOverlay = `
exporters:
  kafka/stock:
    brokers: ["${env:KAFKA_BROKERS}"]
    traces:
      topic: ${env:KAFKA_TOPIC}
      encoding: otlp_proto
    partition_traces_by_id: true
    producer:
      required_acks: -1
      compression: lz4
    sending_queue:
      enabled: true
      queue_size: 1000
      num_consumers: 4
    retry_on_failure:
      enabled: true
      max_elapsed_time: 0s
service:
  pipelines:
    traces:
      exporters: [kafka/stock]
`

// agent is a bin/otelcol-red running configs/agent.yaml.
type agent struct {
	*Collector
	otlpHTTP     string // host:port
	telemetryURL string // the collector's own metrics
}

// startAgent runs configs/agent.yaml writing to broker/topic, with overlays merged over it.
func startAgent(t *testing.T, broker, topic string, overlays ...string) *agent {
	t.Helper()
	httpAddr := freeAddr(t)
	telemetry := freeAddr(t)
	env := map[string]string{
		"KAFKA_BROKERS":      broker,
		"KAFKA_TOPIC":        topic,
		"OTLP_GRPC_ENDPOINT": freeAddr(t),
		"OTLP_HTTP_ENDPOINT": httpAddr,
		"HEALTH_ENDPOINT":    freeAddr(t),
		"TELEMETRY_PORT":     portOf(telemetry),
	}
	return &agent{
		Collector:    StartCollector(t, configPath("agent.yaml"), env, overlayFiles(t, overlays...)...),
		otlpHTTP:     httpAddr,
		telemetryURL: "http://" + telemetry + "/metrics",
	}
}

// requireAllAssigned waits until the group gave every gateway partitions of topic, so no
// gateway consumes everything before the others joined.
func requireAllAssigned(t *testing.T, topic string, gws []*gateway) {
	t.Helper()
	// Generous: three members joining one after the other can take several rebalances on a
	// slow machine; the wait ends as soon as every gateway logged its partitions.
	require.True(t, waitFor(3*time.Minute, func() bool {
		for _, g := range gws {
			if !hasPartitions(g.Logs(), topic) {
				return false
			}
		}
		return true
	}), "the group did not assign partitions to every gateway")
}

// seriesOf returns the label sets of the calls series a gateway exposes.
func seriesOf(t *testing.T, url string) []string {
	t.Helper()
	fams, err := scrape(url)
	require.NoError(t, err)
	f, ok := fams[callsFamily]
	if !ok {
		return nil
	}
	out := make([]string, 0, len(f.GetMetric()))
	for _, m := range f.GetMetric() {
		var parts []string
		for _, lp := range m.GetLabel() {
			parts = append(parts, lp.GetName()+"="+lp.GetValue())
		}
		sort.Strings(parts)
		out = append(out, strings.Join(parts, ","))
	}
	return out
}

// rssBytes is the resident set size of a running collector, from /proc.
func rssBytes(t *testing.T, c *Collector) int64 { return procStatusBytes(t, c, "VmRSS") }

// peakRSSMiB is the peak resident set size of a running collector so far, in MiB.
func peakRSSMiB(t *testing.T, c *Collector) int64 { return procStatusBytes(t, c, "VmHWM") >> 20 }

// procStatusBytes reads a size field (kB) of a running collector's /proc status, in bytes.
func procStatusBytes(t *testing.T, c *Collector, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field+":") {
			kb, err := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc status", field)
	return 0
}

// TestKafkaAffinitySeries sends the same spans of 120 services through configs/agent.yaml to three
// gateways on a 12-partition topic, once with the kafkaaffinity exporter and once with the stock
// kafka exporter: the RED totals summed over the gateways equal what was sent in both runs, and
// the series held across gateways ÷ distinct series is at most 1.2 with affinity against at least
// 2.5 (three gateways each holding nearly every series) without.
func TestKafkaAffinitySeries(t *testing.T) {
	broker := startKafka(t)
	const services, spans, perRequest, gateways, partitions = 120, 24000, 400, 3, 12
	for _, tc := range []struct {
		name     string
		overlays []string
		ok       func(ratio float64) bool
		want     string
	}{
		{"affinity", nil, func(r float64) bool { return r <= 1.2 }, "at most 1.2"},
		{"stock", []string{stockAgentOverlay}, func(r float64) bool { return r >= 2.5 }, "at least 2.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Registered first, so it runs after the collectors' cleanups: a failed run ends with
			// what was expected and seen, after the collector logs they dump.
			var verdict string
			t.Cleanup(func() {
				if t.Failed() && verdict != "" {
					t.Logf("%s: %s", tc.name, verdict)
				}
			})
			topic := "affinity-" + tc.name
			createTopic(t, topic, partitions)
			gws := make([]*gateway, gateways)
			for i := range gws {
				gws[i] = startGateway(t, broker, topic, topic)
			}
			requireAllAssigned(t, topic, gws)

			sender := newESOTLPSender(t, startAgent(t, broker, topic, tc.overlays...).otlpHTTP)
			shape := datasenders.SpanShape{Services: services, SpanNames: 5, ErrorEvery: 7, RunID: newRunID(t)}
			want := map[redKey]int{}
			for first := 0; first < spans; first += perRequest {
				td := shape.Traces(int64(first), perRequest)
				tally(want, td)
				require.NoError(t, sender.send(td))
			}

			// Polled until the totals match, so a fast machine does not wait; the bound is for a
			// slow one (agent batching, queue, broker, three consumers, flushes).
			sum := map[redKey]int{}
			perGateway := make([]int, gateways)
			ok := waitFor(3*time.Minute, func() bool {
				sum = map[redKey]int{}
				for i, g := range gws {
					c, err := scrapeCalls(g.metricsURL)
					if err != nil {
						return false
					}
					perGateway[i] = total(c)
					for k, v := range c {
						sum[k] += v
					}
				}
				return equalCounts(sum, want)
			})
			if !ok {
				verdict = fmt.Sprintf("sum over gateways: %d spans (per gateway %v), want %d", total(sum), perGateway, total(want))
				require.Fail(t, verdict, diffCounts(sum, want))
			}

			held, distinct := 0, map[string]bool{}
			perSeries := make([]int, gateways)
			for i, g := range gws {
				s := seriesOf(t, g.metricsURL)
				perSeries[i] = len(s)
				held += len(s)
				for _, k := range s {
					distinct[k] = true
				}
				t.Logf("%s gateway %d: %d calls series, %d spans, RSS %d bytes", tc.name, i, len(s), perGateway[i], rssBytes(t, g.Collector))
			}
			ratio := float64(held) / float64(len(distinct))
			t.Logf("%s: %d series held over %d gateways, %d distinct, ratio %.2f", tc.name, held, gateways, len(distinct), ratio)
			if !tc.ok(ratio) {
				verdict = fmt.Sprintf("series held ÷ distinct = %d ÷ %d = %.2f, want %s (series per gateway %v, spans per gateway %v)",
					held, len(distinct), ratio, tc.want, perSeries, perGateway)
				assert.Fail(t, verdict)
			}
		})
	}
}
