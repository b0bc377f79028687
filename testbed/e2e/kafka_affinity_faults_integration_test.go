//go:build integration

package e2e

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/testservice"
	"github.com/otelcol-red/otelcol-red/testbed/datasenders"
)

// topicRecord is one record read back from the topic.
type topicRecord struct {
	partition int32
	key       string
	traces    ptrace.Traces
}

// readTopic reads the topic from the start until it holds want spans (or fails after a minute).
func readTopic(t *testing.T, broker, topic string, want int) []topicRecord {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []topicRecord
	var um ptrace.ProtoUnmarshaler
	got := 0
	for got < want {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %d of %d spans from %s", got, want, topic)
		fs.EachRecord(func(r *kgo.Record) {
			td, err := um.UnmarshalTraces(r.Value)
			require.NoError(t, err)
			out = append(out, topicRecord{partition: r.Partition, key: string(r.Key), traces: td})
			got += td.SpanCount()
		})
	}
	return out
}

// spanIDs counts each span id (the generated spans' ids are their sequence numbers + 1).
func spanIDs(recs []topicRecord) map[uint64]int {
	ids := map[uint64]int{}
	for _, r := range recs {
		rss := r.traces.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				spans := sss.At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					id := spans.At(k).SpanID()
					ids[binary.BigEndian.Uint64(id[:])]++
				}
			}
		}
	}
	return ids
}

// requireEverySpanOnce checks that spans 1..n are each in the topic exactly once.
func requireEverySpanOnce(t *testing.T, recs []topicRecord, n int) {
	t.Helper()
	ids := spanIDs(recs)
	var missing, twice int
	for i := 1; i <= n; i++ {
		switch ids[uint64(i)] {
		case 0:
			missing++
		case 1:
		default:
			twice++
		}
	}
	require.Zero(t, missing, "spans acknowledged by the agent and missing from the topic")
	require.Len(t, ids, n, "spans in the topic that were never sent")
	t.Logf("%d spans in the topic, %d of them more than once", n, twice)
}

// withService renames every resource of td to service.
func withService(td ptrace.Traces, service string) ptrace.Traces {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		if service == "" {
			rss.At(i).Resource().Attributes().Remove("service.name")
			continue
		}
		rss.At(i).Resource().Attributes().PutStr("service.name", service)
	}
	return td
}

// TestKafkaAffinityHotService sends 120 services of which one carries 30% of the spans, listed
// as a hot key with fan-out 6: no partition of 12 carries more than 2× the mean, and each trace
// stays on one partition.
func TestKafkaAffinityHotService(t *testing.T) {
	broker := startKafka(t)
	const topic, partitions = "affinity-hot", 12
	createTopic(t, topic, partitions)
	a := startAgent(t, broker, topic, `
exporters:
  kafkaaffinity:
    hot_keys:
      keys:
        - key: svc-hot
          fanout: 6
`)
	sender := newESOTLPSender(t, a.otlpHTTP)
	normal := datasenders.SpanShape{Services: 120, RunID: newRunID(t)}
	const requests, normalPer, hotPer = 60, 280, 120 // 30% hot
	for r := 0; r < requests; r++ {
		first := int64(r * (normalPer + hotPer))
		td := normal.Traces(first, normalPer)
		hot := withService(normal.Traces(first+normalPer, hotPer), "svc-hot")
		// Four spans per trace, so "a trace stays on one partition" has something to check.
		spans := hot.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
		for i := 0; i < spans.Len(); i++ {
			var id [16]byte
			binary.BigEndian.PutUint64(id[:8], normal.RunID+1)
			binary.BigEndian.PutUint64(id[8:], uint64(first)+uint64(i/4))
			spans.At(i).SetTraceID(id)
		}
		hot.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
		require.NoError(t, sender.send(td))
	}
	n := requests * (normalPer + hotPer)
	recs := readTopic(t, broker, topic, n)
	requireEverySpanOnce(t, recs, n)

	perPartition := make([]int, partitions)
	hotPartitions := map[int32]bool{}
	traceAt := map[[16]byte]int32{}
	for _, r := range recs {
		perPartition[r.partition] += r.traces.SpanCount()
		if r.key == "svc-hot" {
			hotPartitions[r.partition] = true
		}
		rss := r.traces.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				for k := 0; k < sss.At(j).Spans().Len(); k++ {
					id := sss.At(j).Spans().At(k).TraceID()
					if p, ok := traceAt[id]; ok {
						require.Equal(t, p, r.partition, "a trace on two partitions")
					}
					traceAt[id] = r.partition
				}
			}
		}
	}
	mean := float64(n) / partitions
	maxSpans := 0
	for _, c := range perPartition {
		maxSpans = max(maxSpans, c)
	}
	t.Logf("spans per partition %v, mean %.0f, max %.2f× the mean; the hot service on %d partitions",
		perPartition, mean, float64(maxSpans)/mean, len(hotPartitions))
	assert.Len(t, hotPartitions, 6)
	assert.LessOrEqual(t, float64(maxSpans), 2*mean)
}

// TestKafkaAffinityBadInput sends resources without service.name and with a 10 KB service.name:
// the first go to the fallback key (counted), the second to a key cut to max_key_bytes, and no
// span is lost.
func TestKafkaAffinityBadInput(t *testing.T) {
	broker := startKafka(t)
	const topic = "affinity-bad-input"
	createTopic(t, topic, 3)
	a := startAgent(t, broker, topic)
	sender := newESOTLPSender(t, a.otlpHTTP)
	shape := datasenders.SpanShape{Services: 4, RunID: newRunID(t)}
	long := strings.Repeat("s", 10<<10)
	require.NoError(t, sender.send(withService(shape.Traces(0, 100), "")))
	require.NoError(t, sender.send(withService(shape.Traces(100, 100), long)))
	require.NoError(t, sender.send(shape.Traces(200, 100)))

	recs := readTopic(t, broker, topic, 300)
	requireEverySpanOnce(t, recs, 300)
	byKey := map[string]int{}
	for _, r := range recs {
		k := r.key
		if len(k) > 64 {
			assert.Len(t, k, 256, "a long key is cut to max_key_bytes")
			assert.True(t, strings.HasPrefix(k, "sss"))
			k = "long"
		}
		byKey[k] += r.traces.SpanCount()
	}
	assert.Equal(t, map[string]int{"_unkeyed": 100, "long": 100, "svc-0": 25, "svc-1": 25, "svc-2": 25, "svc-3": 25}, byKey)
	assert.Equal(t, 100.0, telemetrySum(t, a.telemetryURL, "otelcol_exporter_kafkaaffinity_fallback_spans_total", nil))
	// The long-named request holds four resources (one per generated service), each cut once.
	assert.Equal(t, 4.0, telemetrySum(t, a.telemetryURL, "otelcol_exporter_kafkaaffinity_cut_keys_total", nil))
}

// TestKafkaAffinityBrokerDown starts the agent while the broker is down, and stops the broker
// again mid-stream: every span the agent acknowledged reaches the topic once the broker is back.
func TestKafkaAffinityBrokerDown(t *testing.T) {
	broker := startKafka(t)
	const topic = "affinity-broker-down"
	createTopic(t, topic, 3)
	testservice.Stop(t, "kafka")
	a := startAgent(t, broker, topic)
	sender := newESOTLPSender(t, a.otlpHTTP)
	shape := datasenders.SpanShape{Services: 10, ErrorEvery: 5, RunID: newRunID(t)}
	const per = 100
	sent := 0
	send := func(requests int) {
		for i := 0; i < requests; i++ {
			require.NoError(t, sender.send(shape.Traces(int64(sent), per)))
			sent += per
		}
	}
	send(20) // broker down since before the agent started
	_, err := testservice.Run("kafka", "resume")
	require.NoError(t, err)
	send(20)
	testservice.Stop(t, "kafka") // down mid-stream
	send(20)
	time.Sleep(2 * time.Second)
	_, err = testservice.Run("kafka", "resume")
	require.NoError(t, err)
	send(20)

	recs := readTopic(t, broker, topic, sent)
	requireEverySpanOnce(t, recs, sent)
}

// TestKafkaAffinityRebalance streams spans of 60 services through configs/agent.yaml to three
// gateways on 12 partitions; mid-stream one gateway leaves (SIGTERM) and a fourth joins. Every span
// the agent acknowledged is delivered by some gateway (the ledgers), and duplicates are bounded.
func TestKafkaAffinityRebalance(t *testing.T) {
	broker := startKafka(t)
	const topic, partitions = "affinity-rebalance", 12
	createTopic(t, topic, partitions)
	gws := []*gateway{
		startGateway(t, broker, topic, topic, ledgerOverlay),
		startGateway(t, broker, topic, topic, ledgerOverlay),
		startGateway(t, broker, topic, topic, ledgerOverlay),
	}
	requireAllAssigned(t, topic, gws)

	a := startAgent(t, broker, topic)
	sender := newESOTLPSender(t, a.otlpHTTP)
	shape := datasenders.SpanShape{Services: 60, ErrorEvery: 7, RunID: newRunID(t)}
	// 1000 spans/s for 12 s: the first gateway leaves after 3 s, a fourth joins after 6 s.
	const per, rate, requests = 100, 1000, 120
	tick := time.NewTicker(time.Second * per / rate)
	defer tick.Stop()
	var joined *gateway
	for r := 0; r < requests; r++ {
		<-tick.C
		require.NoError(t, sender.send(shape.Traces(int64(r*per), per)))
		switch r {
		case 30:
			require.NoError(t, gws[0].Stop(t), "first gateway did not exit cleanly on SIGTERM")
		case 60:
			joined = startGateway(t, broker, topic, topic, ledgerOverlay)
			gws = append(gws, joined)
		}
	}
	n := int64(requests * per)
	var missing []int64
	ok := waitFor(time.Minute, func() bool {
		ls := make([]map[int64]int, len(gws))
		for i, g := range gws {
			ls[i] = ledger(g.Logs(), shape.RunID)
		}
		missing, _ = coverage(n, ls...)
		return len(missing) == 0
	})
	for _, g := range gws[1:] {
		requireLedgerComplete(t, g, shape.RunID)
	}
	require.True(t, ok, "%d spans lost in the rebalance, first: %v", len(missing), head(missing, 20))
	ls := make([]map[int64]int, len(gws))
	for i, g := range gws {
		ls[i] = ledger(g.Logs(), shape.RunID)
		t.Logf("gateway %d delivered %d spans", i, ledgerTotal(ls[i]))
	}
	_, dups := coverage(n, ls...)
	t.Logf("%d spans sent, %d delivered twice", n, dups)
	assert.Positive(t, ledgerTotal(ls[3]), "the gateway that joined got no partition")
	assert.LessOrEqual(t, dups, redeliveryBound(rate), "spans delivered twice")
}
