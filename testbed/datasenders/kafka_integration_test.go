//go:build integration

package datasenders

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/testservice"
)

// TestRunKafkaLoad writes a paced run to the real broker and reads the topic back: every
// acknowledged span is on the topic once, decodable as OTLP proto, and the run kept its rate.
func TestRunKafkaLoad(t *testing.T) {
	broker := testservice.Start(t, "kafka")
	const topic = "datasender-load"
	if _, err := testservice.Run("kafka", "create-topic", topic, "3"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const rate = 5000
	res, err := RunKafkaLoad(ctx, KafkaLoad{
		Brokers: []string{broker}, Topic: topic,
		SpansPerSecond: rate, SpansPerMessage: 50, Duration: 2 * time.Second,
		Shape: SpanShape{Services: 4, ErrorEvery: 10},
	})
	require.NoError(t, err)
	require.Zero(t, res.Failed)
	t.Logf("wrote %d spans in %d messages in %v: %.0f spans/s", res.Spans, res.Messages, res.Elapsed, res.SpansPerSecond())
	// Pacing never runs ahead of the target; on a loaded machine it may fall behind a little.
	assert.LessOrEqual(t, res.SpansPerSecond(), rate*1.05)
	assert.GreaterOrEqual(t, res.SpansPerSecond(), rate*0.5)
	assert.Equal(t, res.Spans/10, res.ErrorSpans, "every 10th span is an error")

	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	var um ptrace.ProtoUnmarshaler
	seen := map[int64]int{}
	perService := map[string]int64{}
	var messages int64
	for messages < res.Messages && ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		require.NoError(t, fetches.Err0())
		fetches.EachRecord(func(r *kgo.Record) {
			messages++
			td, err := um.UnmarshalTraces(r.Value)
			require.NoError(t, err)
			for k, v := range countByServiceStatus(td) {
				perService[k] += v
			}
			for _, rs := range td.ResourceSpans().All() {
				for _, sp := range rs.ScopeSpans().At(0).Spans().All() {
					tid := sp.TraceID()
					seen[int64(binary.BigEndian.Uint64(tid[8:]))-1]++
				}
			}
		})
	}
	assert.Equal(t, res.Messages, messages)
	assert.Equal(t, res.PerService, perService)
	require.Len(t, seen, int(res.Spans))
	for i := int64(0); i < res.Spans; i++ {
		require.Equal(t, 1, seen[i], "span %d", i)
	}
}
