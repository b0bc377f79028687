//go:build integration

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/testbed/datasenders"
)

// The Kafka gateway's store crash: it needs both Kafka and Elasticsearch. It sits in a file of
// its own, last of the Kafka tests in file order but for kafka_store_exemplars (which needs both
// too), because make e2e runs the Kafka tests in one process while the other runs the
// Elasticsearch ones (Makefile, E2E_FIRST): here it comes after them, rather than wait for
// Elasticsearch while that process holds it.

// TestKafkaGatewayStoreCrashKeepsCommittedSpans runs the store branch of
// configs/kafka-gateway.yaml (real Kafka, real Elasticsearch), SIGKILLs the gateway mid-stream
// and starts another in the same group on the same queue directory. Offsets are committed once
// the pipeline accepted a message, so every error span the broker acknowledged is stored: the
// first gateway's disk queue holds what it committed, the second re-reads the rest.
func TestKafkaGatewayStoreCrashKeepsCommittedSpans(t *testing.T) {
	broker := startKafka(t)
	esAddr, ix := startESIndex(t)
	topic := "store-crash"
	createTopic(t, topic, 4)
	storage := t.TempDir()
	startStore := func() *Collector {
		env := map[string]string{
			"KAFKA_BROKERS":           broker,
			"KAFKA_TOPIC":             topic,
			"KAFKA_GROUP":             topic,
			"METRICS_ENDPOINT":        freeAddr(t),
			"HEALTH_ENDPOINT":         freeAddr(t),
			"TELEMETRY_PORT":          portOf(freeAddr(t)),
			"ES_ENDPOINT":             "http://" + esAddr,
			"ES_INDEX":                ix.index,
			"OTELCOL_RED_STORAGE_DIR": storage,
		}
		return StartCollector(t, configPath("kafka-gateway.yaml"), env)
	}
	a := startStore()

	// Durations of 1–100 ms are under the slow threshold: the stored spans are the errors.
	shape := datasenders.SpanShape{Services: esCrashServices, ErrorEvery: 10, RunID: newRunID(t)}
	const n, rate = 150_000, 10_000
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	done := runLoad(ctx, t, datasenders.KafkaLoad{
		Brokers: []string{broker}, Topic: topic,
		SpansPerSecond: rate, SpansPerMessage: 100, MaxSpans: n,
		Duration: 2 * time.Minute, Shape: shape,
	})
	require.Positive(t, esWaitForCount(ix, 1, 60*time.Second), "no span reached Elasticsearch")
	time.Sleep(6 * time.Second)
	a.Kill()
	killedAt := time.Now()
	startStore()
	res := <-done
	loadAfterKill := time.Since(killedAt)
	require.Equal(t, int64(0), res.Failed, "spans the broker never acknowledged")
	require.Equal(t, int64(n), res.Spans)

	wantErrors := 0
	for i := int64(0); i < n; i++ {
		if shape.IsError(i) {
			wantErrors++
		}
	}
	docs := esWaitSettled(t, ix, wantErrors, 3*time.Minute)
	copies, foreign := esRunCopies(docs, shape.RunID)
	tally := esTally(copies, shape.IsError, n, shape.IsError)
	t.Logf("produced %d spans at %.0f spans/s, gateway killed 6 s after the first document, %v before the load ended; errors: %s",
		n, res.SpansPerSecond(), loadAfterKill.Round(time.Second), tally)
	assert.Zero(t, foreign, "documents of another run")
	assert.Zero(t, tally.unwanted, "documents of spans the filter drops")
	assert.LessOrEqual(t, tally.duplicates, esCrashDuplicateBound+redeliveryBound(rate), "duplicate documents")
	require.Zero(t, tally.lost, "error spans the broker acknowledged missing from Elasticsearch, e.g. span indices %v", tally.firstLost)
}
