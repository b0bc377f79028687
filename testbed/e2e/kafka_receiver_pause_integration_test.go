//go:build integration

package e2e

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"

	"github.com/otelcol-red/otelcol-red/testbed/datasenders"
)

type acceptAll struct {
	ptraceotlp.UnimplementedGRPCServer
}

func (*acceptAll) Export(context.Context, ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	return ptraceotlp.NewExportResponse(), nil
}

// serveOTLP accepts every OTLP gRPC export on addr until the test ends.
func serveOTLP(t *testing.T, addr string) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := grpc.NewServer()
	ptraceotlp.RegisterGRPCServer(srv, &acceptAll{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
}

// probeOverlay adds a pipeline on the gateway's kafka receiver whose only exporter sends to addr
// with no queue and no retry: while nothing listens there, every message fails with a retryable
// error and the receiver's error_backoff retries it.
func probeOverlay(addr string) string {
	return pdataConnector + `
exporters:
  otlp/probe:
    endpoint: ` + addr + `
    tls:
      insecure: true
    timeout: 1s
    sending_queue:
      enabled: false
    retry_on_failure:
      enabled: false
service:
  pipelines:` + pdataPipeline + `
    traces/probe:
      receivers: [hotspotfilter/pdata]
      exporters: [otlp/probe]
`
}

// TestKafkaReceiverResumesAfterRevoke checks the contrib kafka receiver on the gateway config: a
// partition revoked while its message is in error backoff, then given back to the same gateway,
// must be consumed there again. Up to contrib v0.145.0 it was not: the receiver paused the
// partition (PauseFetchPartitions) and nothing resumed it, so its lag grew until the gateway
// restarted. v0.165.1 resumes every partition it is assigned; this test shows it on the real
// broker, and fails should the defect come back.
func TestKafkaReceiverResumesAfterRevoke(t *testing.T) {
	broker := startKafka(t)
	const topic = "pause-after-revoke"
	createTopic(t, topic, 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	var m ptrace.ProtoMarshaler
	produce := func(run uint64, partition int32, n int) {
		shape := datasenders.SpanShape{Services: 2, RunID: run}
		v, err := m.MarshalTraces(shape.Traces(0, n))
		require.NoError(t, err)
		require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Partition: partition, Value: v}).FirstErr())
	}
	// Phase 1: a message on each partition before gateway A starts, so its first fetch holds
	// both and it backs off on both.
	produce(newRunID(t), 0, 10)
	produce(newRunID(t), 1, 10)
	probe := freeAddr(t) // nothing listens yet
	a := startGateway(t, broker, topic, topic, ledgerOverlay, probeOverlay(probe))
	require.True(t, waitFor(60*time.Second, func() bool {
		l := a.Logs()
		return backingOff(l, 0) && backingOff(l, 1)
	}), "gateway A did not back off on both partitions")
	sessionsA := strings.Count(a.Logs(), `"added": "`+topic+`[`)

	// Phase 2: gateway B joins; the partition it takes is revoked from A mid-backoff.
	b := startGateway(t, broker, topic, topic)
	require.True(t, waitFor(60*time.Second, func() bool { return hasPartitions(b.Logs(), topic) }),
		"gateway B got no partition")

	// Phase 3: B leaves, both partitions are A's again (A begins a session that adds the one B had;
	// the session B's joining began added nothing to A), and the
	// probe endpoint comes up.
	require.NoError(t, b.Stop(t))
	require.True(t, waitFor(60*time.Second, func() bool {
		return strings.Count(a.Logs(), `"added": "`+topic+`[`) > sessionsA
	}), "the partition did not come back to A")
	serveOTLP(t, probe)
	time.Sleep(5 * time.Second) // the probe's gRPC connection backoff
	run0, run1 := newRunID(t), newRunID(t)
	produce(run0, 0, 10)
	produce(run1, 1, 10)
	got := func() (int, int) {
		l := a.Logs()
		return ledgerTotal(ledger(l, run0)), ledgerTotal(ledger(l, run1))
	}
	// Both partitions are consumed, the one that was revoked mid-backoff too.
	ok := waitFor(90*time.Second, func() bool {
		n0, n1 := got()
		return n0 >= 10 && n1 >= 10
	})
	n0, n1 := got()
	t.Logf("after the partition came back: A delivered %d spans of partition 0 and %d of partition 1", n0, n1)
	require.True(t, ok, "a partition revoked in error backoff is not consumed after it came back (%d and %d of 10 spans)", n0, n1)
}

// backingOff tells whether the logs show an error backoff on partition p.
func backingOff(logs string, p int) bool {
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "Backing off") && strings.Contains(line, `"partition": `+strconv.Itoa(p)) {
			return true
		}
	}
	return false
}
