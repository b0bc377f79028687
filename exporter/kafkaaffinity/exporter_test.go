package kafkaaffinity

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

const testPartitions = 12

// fakeCluster is an in-process Kafka (franz-go's kfake) with the topic
// already created; tests against a real broker live in testbed/e2e.
func fakeCluster(t *testing.T) *kfake.Cluster {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(testPartitions, defaultTopic))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// readAll consumes want spans from the topic and returns, per record, its
// partition, key and decoded traces.
func readAll(t *testing.T, brokers []string, want int) []consumed {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(defaultTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []consumed
	got := 0
	var um ptrace.ProtoUnmarshaler
	for got < want {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %d of %d spans", got, want)
		fs.EachRecord(func(r *kgo.Record) {
			td, err := um.UnmarshalTraces(r.Value)
			require.NoError(t, err)
			out = append(out, consumed{partition: r.Partition, key: string(r.Key), traces: td})
			got += td.SpanCount()
		})
	}
	assert.Equal(t, want, got)
	return out
}

type consumed struct {
	partition int32
	key       string
	traces    ptrace.Traces
}

func TestExporterWritesOneRecordPerKey(t *testing.T) {
	c := fakeCluster(t)
	cfg := testConfig()
	cfg.Brokers = c.ListenAddrs()
	cfg.HotKeys.Keys = []StaticHotKey{{Key: "hot", Fanout: 3}}

	exp, err := newExporter(cfg, exportertest.NewNopSettings(NewFactory().Type()), clockwork.NewRealClock())
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()

	td := ptrace.NewTraces()
	addResource(td, "a", 3, 3)
	addResource(td, "b", 2, 2)
	addResource(td, "", 1, 1)
	addResource(td, "hot", 30, 30)
	require.NoError(t, exp.ConsumeTraces(context.Background(), td))

	recs := readAll(t, cfg.Brokers, td.SpanCount())
	spans := map[string]int{}
	hotParts := map[int32]bool{}
	for _, r := range recs {
		spans[r.key] += r.traces.SpanCount()
		if r.key == "hot" {
			hotParts[r.partition] = true
		} else {
			assert.Equal(t, int32(partitionOf(&kgo.Record{Key: []byte(r.key)}, testPartitions)), r.partition)
		}
	}
	assert.Len(t, recs, 6, "a, b, _unkeyed and three hot sub-records")
	assert.Equal(t, map[string]int{"a": 3, "b": 2, "_unkeyed": 1, "hot": 30}, spans)
	assert.Len(t, hotParts, 3, "the hot key's sub-records take three partitions")
}

// TestExporterKeysByTraceID: with key_by: trace_id, the spans of one trace
// share a partition whichever service (and so whichever request) carried
// them, and trace_id_buckets equal to the partition count use every
// partition once.
func TestExporterKeysByTraceID(t *testing.T) {
	c := fakeCluster(t)
	cfg := testConfig()
	cfg.Brokers = c.ListenAddrs()
	cfg.KeyBy = keyByTraceID
	cfg.TraceIDBuckets = testPartitions
	exp, err := newExporter(cfg, exportertest.NewNopSettings(NewFactory().Type()), clockwork.NewRealClock())
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()

	// Two agents: the client spans of 120 traces in one request, their
	// server spans in another.
	client, server := ptrace.NewTraces(), ptrace.NewTraces()
	addResource(client, "frontend", 240, 120)
	addResource(server, "backend", 120, 120)
	require.NoError(t, exp.ConsumeTraces(context.Background(), client))
	require.NoError(t, exp.ConsumeTraces(context.Background(), server))

	recs := readAll(t, cfg.Brokers, client.SpanCount()+server.SpanCount())
	where := map[pcommon.TraceID]int32{}
	parts := map[int32]int{}
	for _, r := range recs {
		assert.Equal(t, traceIDKey, r.key)
		parts[r.partition]++
		rss := r.traces.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			spans := rss.At(i).ScopeSpans().At(0).Spans()
			for j := 0; j < spans.Len(); j++ {
				id := spans.At(j).TraceID()
				if p, ok := where[id]; ok {
					require.Equal(t, p, r.partition, "trace %v on two partitions", id)
				}
				where[id] = r.partition
			}
		}
	}
	assert.Len(t, where, 120)
	assert.Len(t, parts, testPartitions, "every partition")
	for p, n := range parts {
		assert.Equal(t, 2, n, "partition %d: one record per request", p)
	}
}

// TestExporterSendsLinkedConsumersToTheirProducers: with key_by: trace_id, a
// CONSUMER span whose producer is in another trace (joined by a span link, as
// the messaging conventions do) reaches the partition of the producer's
// trace, whichever agent sends it, and each link is carried to exactly one
// partition: the graph gateway reading the producer's partition pairs the
// two, and no other gateway counts the link.
func TestExporterSendsLinkedConsumersToTheirProducers(t *testing.T) {
	c := fakeCluster(t)
	cfg := testConfig()
	cfg.Brokers = c.ListenAddrs()
	cfg.KeyBy = keyByTraceID
	cfg.TraceIDBuckets = testPartitions
	exp, err := newExporter(cfg, exportertest.NewNopSettings(NewFactory().Type()), clockwork.NewRealClock())
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()

	// One agent: 60 PRODUCER spans, each the root of its own trace 0..59.
	// Another: 20 CONSUMER spans in traces 100..119, each linking to the
	// producers of three messages (a batch receive).
	producers, consumers := ptrace.NewTraces(), ptrace.NewTraces()
	ps := producers.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i := range 60 {
		p := ps.AppendEmpty()
		p.SetKind(ptrace.SpanKindProducer)
		p.SetTraceID(traceID(uint64(i)))
		p.SetSpanID(pcommon.SpanID{1, byte(i)})
	}
	cs := consumers.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i := range 20 {
		s := cs.AppendEmpty()
		s.SetKind(ptrace.SpanKindConsumer)
		s.SetTraceID(traceID(uint64(100 + i)))
		s.SetSpanID(pcommon.SpanID{2, byte(i)})
		for j := range 3 {
			l := s.Links().AppendEmpty()
			l.SetTraceID(traceID(uint64(3*i + j)))
			l.SetSpanID(pcommon.SpanID{1, byte(3*i + j)})
		}
	}
	require.NoError(t, exp.ConsumeTraces(context.Background(), producers))
	require.NoError(t, exp.ConsumeTraces(context.Background(), consumers))

	// Up to three copies of each consumer: one per partition its links reach.
	copies := 0
	for i := range 20 {
		parts := map[int]bool{}
		for j := range 3 {
			parts[subKey(traceID(uint64(3*i+j)), testPartitions)] = true
		}
		copies += len(parts)
	}
	recs := readAll(t, cfg.Brokers, producers.SpanCount()+copies)
	producerAt := map[pcommon.SpanID]int32{}
	linkAt := map[pcommon.SpanID][]int32{}
	for _, r := range recs {
		spans := r.traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
		for j := 0; j < spans.Len(); j++ {
			s := spans.At(j)
			if s.Kind() == ptrace.SpanKindProducer {
				producerAt[s.SpanID()] = r.partition
				continue
			}
			for k := 0; k < s.Links().Len(); k++ {
				l := s.Links().At(k)
				linkAt[l.SpanID()] = append(linkAt[l.SpanID()], r.partition)
			}
		}
	}
	require.Len(t, producerAt, 60)
	require.Len(t, linkAt, 60, "every link carried")
	for id, at := range producerAt {
		assert.Equal(t, []int32{at}, linkAt[id], "the link to producer %v: on its partition, once", id)
	}
}

func TestExporterJSON(t *testing.T) {
	c := fakeCluster(t)
	cfg := testConfig()
	cfg.Brokers = c.ListenAddrs()
	cfg.Encoding = encodingJSON
	exp, err := newExporter(cfg, exportertest.NewNopSettings(NewFactory().Type()), clockwork.NewRealClock())
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()
	td := ptrace.NewTraces()
	addResource(td, "a", 2, 2)
	require.NoError(t, exp.ConsumeTraces(context.Background(), td))

	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...), kgo.ConsumeTopics(defaultTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fs := cl.PollFetches(ctx)
	require.NoError(t, ctx.Err())
	var um ptrace.JSONUnmarshaler
	got, err := um.UnmarshalTraces(fs.Records()[0].Value)
	require.NoError(t, err)
	assert.Equal(t, td, got)
}

// With no broker to take the records, the call fails (the queue keeps the
// request and retries) instead of reporting success.
func TestExporterBrokerDownFails(t *testing.T) {
	c := fakeCluster(t)
	cfg := testConfig()
	cfg.Brokers = c.ListenAddrs()
	c.Close()
	exp, err := newExporter(cfg, exportertest.NewNopSettings(NewFactory().Type()), clockwork.NewRealClock())
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()), "start does not need a broker")
	defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()
	td := ptrace.NewTraces()
	addResource(td, "a", 1, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	assert.Error(t, exp.ConsumeTraces(ctx, td))
}

// The hot-key interval runs on the exporter's clock: a key is hot when its
// rate over the elapsed interval passes the threshold, not before the tick.
func TestExporterTicksHotKeysOnItsClock(t *testing.T) {
	c := fakeCluster(t)
	cfg := testConfig()
	cfg.Brokers = c.ListenAddrs()
	cfg.HotKeys.SpansPerSecond = 100
	cfg.HotKeys.Interval = time.Minute
	clock := clockwork.NewFakeClock()
	exp, err := newExporter(cfg, exportertest.NewNopSettings(NewFactory().Type()), clock)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()

	assert.Equal(t, 1, exp.hot.observe([]byte("busy"), 200*60), "200 spans/s over the minute")
	assert.Equal(t, 1, exp.hot.observe([]byte("calm"), 50*60), "50 spans/s over the minute")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, clock.BlockUntilContext(ctx, 1), "the tick loop waits on the clock")
	assert.Equal(t, 1, exp.hot.observe([]byte("busy"), 0), "not hot before the interval ends")
	clock.Advance(time.Minute)
	require.Eventually(t, func() bool { return exp.hot.observe([]byte("busy"), 0) > 1 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, 1, exp.hot.observe([]byte("calm"), 0), "below the rate over the elapsed minute")
}
