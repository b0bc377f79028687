//go:build integration

package e2e

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/internal/testservice"
)

// The store branch (configs/es-store.yaml) on a real Elasticsearch 7.17 started by
// scripts/elasticsearch.sh. Every test writes to an index of its own and deletes it at the end.

// esStoreConfig is the configuration under test.
var esStoreConfig = configPath("es-store.yaml")

// startESIndex starts Elasticsearch (stopped when the test ends) and names an index for the test,
// deleted before Elasticsearch stops.
func startESIndex(t *testing.T) (string, *esIndex) {
	addr := testservice.Start(t, "elasticsearch")
	ix := newESIndex(t, addr, esTestIndex(t))
	t.Cleanup(func() {
		if err := ix.delete(); err != nil {
			t.Logf("cannot delete index %s: %v", ix.index, err)
		}
	})
	return addr, ix
}

// TestESStoreKeepsErrorsAndSlowSpans sends errors and slow spans among fast ones and looks each
// stored span up by trace ID, the way a user finds the trace of an anomaly.
func TestESStoreKeepsErrorsAndSlowSpans(t *testing.T) {
	esAddr, ix := startESIndex(t)
	env, telemetry := esStoreEnv(t, esAddr, ix.index, t.TempDir())
	StartCollector(t, esStoreConfig, env)
	sender := newESOTLPSender(t, env["OTLP_HTTP_ENDPOINT"])

	const total, perRequest = 1200, 200
	run := uint64(time.Now().UnixNano())
	var sent []esSpan
	for first := 0; first < total; first += perRequest {
		td, spans := esSpanBatch(run, first, perRequest)
		require.NoError(t, sender.send(td))
		sent = append(sent, spans...)
	}
	kept := esKept(sent)
	// 10% fast errors, 10% slow, 1/30 slow errors, 5% exactly at the threshold.
	require.Len(t, kept, 340, "the span generator changed; fix the expected numbers")

	// The exporter counts spans of successful bulk requests; once it reaches the kept count every
	// kept span is indexed, and the refresh in count() makes them searchable.
	sentByExporter := WaitForSum(t, telemetry, "otelcol_exporter_sent_spans_total",
		map[string]string{"exporter": "elasticsearch"}, float64(len(kept)), 60*time.Second)
	require.Equal(t, float64(len(kept)), sentByExporter, "spans the exporter reports as written")
	require.Equal(t, 0.0, esExporterMetric(t, telemetry, "otelcol_exporter_send_failed_spans_total"))
	n, err := ix.count()
	require.NoError(t, err)
	require.Equal(t, len(kept), n, "documents in %s", ix.index)

	docs, err := ix.all()
	require.NoError(t, err)
	copies := esCheckStored(t, docs, sent)
	require.Len(t, copies, len(kept), "distinct spans stored")

	for _, s := range kept {
		hits, err := ix.byTraceID(s.traceID)
		require.NoError(t, err)
		require.Len(t, hits, 1, "documents of trace %s", s.traceID)
		d := hits[0]
		assert.Equal(t, s.spanID, d.SpanID, "trace %s", s.traceID)
		assert.Equal(t, s.service, d.Service, "trace %s", s.traceID)
		assert.Equal(t, s.name, d.Name, "trace %s", s.traceID)
		assert.Equal(t, s.duration.Microseconds(), d.Duration, "trace %s duration (µs)", s.traceID)
		assert.Equal(t, s.status, d.TraceStatus, "trace %s status", s.traceID)
		if s.errored {
			assert.Equal(t, "boom", d.StatusMessage, "trace %s status message", s.traceID)
		}
	}
	// And the lookup of a dropped span finds nothing, including the one 1ns under the threshold.
	for _, i := range []int{1, 2, 16, 36, 1199} {
		require.False(t, sent[i].keep, "span %d", i)
		hits, err := ix.byTraceID(sent[i].traceID)
		require.NoError(t, err)
		assert.Empty(t, hits, "dropped span %d (%s, %v) was stored", i, sent[i].traceID, sent[i].duration)
	}
}

// esOutage is how long TestESStoreSurvivesElasticsearchOutage keeps Elasticsearch down: 60 s in
// `make test`; OTELCOL_RED_ES_OUTAGE sets another length (`make test-faults-full` runs 10m, the
// long outage the store branch must hold: its retries last at least 14.5 min).
func esOutage(t *testing.T) time.Duration {
	if v := os.Getenv("OTELCOL_RED_ES_OUTAGE"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "OTELCOL_RED_ES_OUTAGE")
		return d
	}
	return 60 * time.Second
}

// TestESStoreSurvivesElasticsearchOutage stops Elasticsearch for a minute under steady load:
// once it is back, every span that must be stored is stored, and duplicates stay within what the
// exporter documents.
func TestESStoreSurvivesElasticsearchOutage(t *testing.T) {
	esAddr, ix := startESIndex(t)
	storage := t.TempDir()
	env, telemetry := esStoreEnv(t, esAddr, ix.index, storage)
	StartCollector(t, esStoreConfig, env)
	sender := newESOTLPSender(t, env["OTLP_HTTP_ENDPOINT"])

	// 250 spans/s, about 70 kept per second: a few thousand documents over the run.
	const perRequest, every = 50, 200 * time.Millisecond
	run := uint64(time.Now().UnixNano())
	var (
		mu      sync.Mutex
		sent    []esSpan
		sendErr error
	)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for next := 0; ; next += perRequest {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			td, spans := esSpanBatch(run, next, perRequest)
			// Taken before the request leaves: the collector cannot have exported a span earlier.
			sentAt := time.Now()
			if err := sender.send(td); err != nil {
				mu.Lock()
				sendErr = err
				mu.Unlock()
				return
			}
			mu.Lock()
			for i := range spans {
				spans[i].sentAt = sentAt
				sent = append(sent, spans[i])
			}
			mu.Unlock()
		}
	}()
	stopLoad := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}
	defer stopLoad()

	require.Positive(t, esWaitForCount(ix, 1, 30*time.Second), "no span reached Elasticsearch before the outage")
	time.Sleep(3 * time.Second)

	outage := esOutage(t)
	stoppedAt := time.Now()
	testservice.Stop(t, "elasticsearch")
	// Elasticsearch keeps executing bulk requests while it shuts down (seconds), and any of them
	// may lose its answer; so spans sent until the process is gone may be indexed twice.
	downAt := time.Now()
	t.Logf("elasticsearch stopped in %v; down for %v under load", downAt.Sub(stoppedAt).Round(time.Millisecond), outage)
	time.Sleep(outage)
	// What the outage costs on disk: the queued spans and the size of the queue's files.
	queuedSpans := esExporterMetric(t, telemetry, "otelcol_exporter_queue_size")
	t.Logf("at the end of the outage: %v spans queued, %d bytes in the queue directory", queuedSpans, dirBytes(t, storage))
	restartedAt := time.Now()
	_, err := testservice.Run("elasticsearch", "start")
	require.NoError(t, err)
	t.Logf("elasticsearch ready again after %v", time.Since(restartedAt).Round(time.Millisecond))
	time.Sleep(5 * time.Second)
	stopLoad()

	mu.Lock()
	require.NoError(t, sendErr, "the collector refused spans; the queue must absorb the outage")
	all := sent
	mu.Unlock()
	kept := esKept(all)

	// The exporter retries at most every 60 s (max_interval), so delivery resumes within a minute
	// of Elasticsearch being back; the rest of the wait is the disk queue draining.
	got := esWaitForCount(ix, len(kept), 4*time.Minute)
	t.Logf("sent %d spans, %d to keep; %d documents %v after the restart", len(all), len(kept), got, time.Since(restartedAt).Round(time.Second))
	queued := WaitForSum(t, telemetry, "otelcol_exporter_queue_size", map[string]string{"exporter": "elasticsearch"}, 0, 60*time.Second)
	require.Equal(t, 0.0, queued, "requests left in the sending queue")
	// A batch the exporter gives up on counts here; zero means nothing was dropped.
	require.Equal(t, 0.0, esExporterMetric(t, telemetry, "otelcol_exporter_send_failed_spans_total"), "spans dropped by the exporter")

	docs, err := ix.all()
	require.NoError(t, err)
	copies := esCheckStored(t, docs, all)
	require.Len(t, copies, len(kept), "distinct spans stored")

	// Spans carry no document ID, so a bulk request that Elasticsearch executed but could not
	// answer (it was shutting down) is indexed again on retry; the exporter documents retries as
	// its source of duplicates. So a duplicate can only be a span sent before Elasticsearch
	// was down (the stop had ended), and one lost answer adds one copy.
	duplicates, sentBeforeDown := 0, 0
	sentAt := make(map[string]time.Time, len(kept))
	for _, s := range kept {
		sentAt[s.spanID] = s.sentAt
		if s.sentAt.Before(downAt) {
			sentBeforeDown++
		}
	}
	for id, n := range copies {
		if n == 1 {
			continue
		}
		duplicates += n - 1
		assert.LessOrEqual(t, n, 2, "copies of span %s", id)
		assert.True(t, sentAt[id].Before(downAt), "span %s sent %v after elasticsearch was down is duplicated", id, sentAt[id].Sub(downAt))
	}
	t.Logf("outage %v: %d spans acknowledged, %d kept; %d documents: %d distinct kept spans, %d lost, %d duplicates (of %d kept spans sent before elasticsearch was down)",
		outage, len(all), len(kept), len(docs), len(copies), esMissing(copies, kept), duplicates, sentBeforeDown)
}

// TestESStoreDrainsDiskQueueAfterCollectorRestart fills the on-disk sending queue while
// Elasticsearch is down, restarts the collector while it is still down, and checks that the new
// process delivers the queue once Elasticsearch is back.
func TestESStoreDrainsDiskQueueAfterCollectorRestart(t *testing.T) {
	esAddr, ix := startESIndex(t)
	testservice.Stop(t, "elasticsearch")
	storage := t.TempDir()

	env, telemetry := esStoreEnv(t, esAddr, ix.index, storage)
	first := StartCollector(t, esStoreConfig, env)
	sender := newESOTLPSender(t, env["OTLP_HTTP_ENDPOINT"])
	const total, perRequest = 2000, 200
	run := uint64(time.Now().UnixNano())
	var sent []esSpan
	for i := 0; i < total; i += perRequest {
		td, spans := esSpanBatch(run, i, perRequest)
		require.NoError(t, sender.send(td))
		sent = append(sent, spans...)
	}
	kept := esKept(sent)
	require.Equal(t, float64(total), WaitForSum(t, telemetry, "otelcol_receiver_accepted_spans_total",
		map[string]string{"receiver": "otlp"}, total, 10*time.Second))
	// A request is answered once its kept spans are in the sending queue on disk (no batch
	// processor in front of it); the wait lets the exporter's workers take their first batches.
	time.Sleep(3 * time.Second)
	require.Positive(t, esExporterMetric(t, telemetry, "otelcol_exporter_queue_size"), "requests in the sending queue")
	require.Equal(t, 0.0, esExporterMetric(t, telemetry, "otelcol_exporter_sent_spans_total"))

	// While Elasticsearch is down the exporter's workers sit in their retry loops, and a graceful
	// shutdown waits for them; a supervisor kills the process after its grace period. Requests a
	// worker held are still on disk, marked as in flight, and come back on the next start.
	stoppedAt := time.Now()
	graceful := esStopWithGrace(first, 10*time.Second)
	t.Logf("first collector exited gracefully: %v, after %v", graceful, time.Since(stoppedAt).Round(time.Millisecond))

	env2, telemetry2 := esStoreEnv(t, esAddr, ix.index, storage)
	StartCollector(t, esStoreConfig, env2)
	time.Sleep(3 * time.Second) // the new process retries against the stopped node first
	_, err := testservice.Run("elasticsearch", "start")
	require.NoError(t, err)
	restartedAt := time.Now()

	got := esWaitForCount(ix, len(kept), 2*time.Minute)
	t.Logf("%d documents of %d kept spans %v after Elasticsearch was back", got, len(kept), time.Since(restartedAt).Round(time.Second))
	require.Equal(t, 0.0, WaitForSum(t, telemetry2, "otelcol_exporter_queue_size",
		map[string]string{"exporter": "elasticsearch"}, 0, 60*time.Second), "requests left in the sending queue")
	// Every document came from the second process' disk queue: the first never reached Elasticsearch.
	require.Equal(t, float64(len(kept)), esExporterMetric(t, telemetry2, "otelcol_exporter_sent_spans_total"))
	require.Equal(t, 0.0, esExporterMetric(t, telemetry2, "otelcol_exporter_send_failed_spans_total"))

	docs, err := ix.all()
	require.NoError(t, err)
	esCheckStored(t, docs, sent)
	// Elasticsearch was down until the queue was replayed, so no request can have been indexed
	// twice: exactly one document per kept span.
	require.Len(t, docs, len(kept), "documents in %s", ix.index)
}

// TestESStoreCutsRedisFloodOfHotService sends a flood of fast successful Redis calls from one
// service and a trickle from another: the hot service's fast Redis spans are stored within its
// hotspotfilter budget and no more, while its errors, slow calls, and the quiet service's calls
// are all stored.
func TestESStoreCutsRedisFloodOfHotService(t *testing.T) {
	esAddr, ix := startESIndex(t)
	env, telemetry := esStoreEnv(t, esAddr, ix.index, t.TempDir())
	const budget, burst = 20, 20
	env["HOTSPOT_BUDGET"], env["HOTSPOT_BURST"] = itoa(budget), itoa(burst)
	StartCollector(t, esStoreConfig, env)
	sender := newESOTLPSender(t, env["OTLP_HTTP_ENDPOINT"])

	run := uint64(time.Now().UnixNano())
	kinds := map[string]esRedisSpanKind{}
	service := map[string]string{}
	add := func(svc string, k map[string]esRedisSpanKind) {
		for id, kind := range k {
			kinds[id], service[id] = kind, svc
		}
	}
	// The quiet service stays under its burst: all of its spans that must be stored, and all its
	// fast Redis calls, are stored.
	td, k := esRedisBatch(run, "quiet", 1_000_000, 15)
	require.NoError(t, sender.send(td))
	add("quiet", k)

	// The budget refills with the collector's clock while it judges spans, which happens inside
	// the requests timed here, so at most burst + budget·elapsed fast Redis spans can pass.
	const requests, perRequest = 10, 500
	start := time.Now()
	for r := 0; r < requests; r++ {
		td, k := esRedisBatch(run, "hot", r*perRequest, perRequest)
		require.NoError(t, sender.send(td))
		add("hot", k)
		time.Sleep(100 * time.Millisecond)
	}
	elapsed := time.Since(start)

	mustStore := 0
	for id, kind := range kinds {
		if kind != esRedisFast && kind != esServerFast || kind == esRedisFast && service[id] == "quiet" {
			mustStore++
		}
	}
	require.GreaterOrEqual(t, esWaitForCount(ix, mustStore, 60*time.Second), mustStore)
	// Let the batch processor and the sending queue flush what is left, then check nothing moves.
	time.Sleep(4 * time.Second)
	docs, err := ix.all()
	require.NoError(t, err)
	time.Sleep(2 * time.Second)
	n, err := ix.count()
	require.NoError(t, err)
	require.Equal(t, len(docs), n, "documents still arriving")
	require.Equal(t, 0.0, esExporterMetric(t, telemetry, "otelcol_exporter_send_failed_spans_total"))

	copies := map[string]int{}
	for _, d := range docs {
		copies[d.SpanID]++
		_, known := kinds[d.SpanID]
		require.True(t, known, "unknown span %s stored", d.SpanID)
	}
	hotFastStored, hotFastSent := 0, 0
	for id, kind := range kinds {
		n := copies[id]
		require.LessOrEqual(t, n, 1, "copies of span %s", id)
		switch {
		case kind == esServerFast:
			assert.Zero(t, n, "fast server span %s of %s stored", id, service[id])
		case kind == esRedisFast && service[id] == "hot":
			hotFastSent++
			hotFastStored += n
		default:
			assert.Equal(t, 1, n, "span %s (kind %d) of %s not stored", id, kind, service[id])
		}
	}
	maxPassed := burst + int(float64(budget)*elapsed.Seconds()) + 1
	t.Logf("hot service: %d of %d fast Redis spans stored in %v (budget allows %d)", hotFastStored, hotFastSent, elapsed.Round(time.Millisecond), maxPassed)
	require.Positive(t, hotFastStored, "the budget lets some fast Redis spans through")
	require.LessOrEqual(t, hotFastStored, maxPassed, "fast Redis spans of the hot service beyond its budget")
}
