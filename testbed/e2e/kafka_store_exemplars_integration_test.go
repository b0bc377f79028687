//go:build integration

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/testbed/datasenders"
)

// Like TestKafkaGatewayStoreCrashKeepsCommittedSpans it needs Kafka and Elasticsearch, and sits
// after it in file order, last of the Kafka tests (Makefile, E2E_FIRST).

// exemplarRef is the span an exemplar names.
type exemplarRef struct {
	traceID, spanID string
}

// exemplarLabels reads trace_id and span_id from an OpenMetrics exemplar's label set.
var exemplarLabels = regexp.MustCompile(`# \{[^}]*trace_id="([0-9a-f]+)"[^}]*span_id="([0-9a-f]+)"[^}]*\}|# \{[^}]*span_id="([0-9a-f]+)"[^}]*trace_id="([0-9a-f]+)"[^}]*\}`)

// scrapeExemplars asks url for format (OpenMetrics text or delimited protobuf) and returns the
// spans its exemplars name.
func scrapeExemplars(url string, protobuf bool) ([]exemplarRef, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if protobuf {
		req.Header.Set("Accept", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited")
	} else {
		req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0")
	}
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	var out []exemplarRef
	if !protobuf {
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		for _, m := range exemplarLabels.FindAllSubmatch(body, -1) {
			if len(m[1]) > 0 {
				out = append(out, exemplarRef{traceID: string(m[1]), spanID: string(m[2])})
			} else {
				out = append(out, exemplarRef{traceID: string(m[4]), spanID: string(m[3])})
			}
		}
		return out, nil
	}
	if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, "protobuf") {
		return nil, fmt.Errorf("%s answered %q to a protobuf request", url, ct)
	}
	dec := expfmt.NewDecoder(resp.Body, expfmt.NewFormat(expfmt.TypeProtoDelim))
	add := func(e *dto.Exemplar) {
		if e == nil {
			return
		}
		var ref exemplarRef
		for _, l := range e.GetLabel() {
			switch l.GetName() {
			case "trace_id":
				ref.traceID = l.GetValue()
			case "span_id":
				ref.spanID = l.GetValue()
			}
		}
		out = append(out, ref)
	}
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		for _, m := range mf.GetMetric() {
			add(m.GetCounter().GetExemplar())
			for _, b := range m.GetHistogram().GetBucket() {
				add(b.GetExemplar())
			}
			for _, e := range m.GetHistogram().GetExemplars() {
				add(e)
			}
		}
	}
}

// TestKafkaGatewayExemplarsOpenStoredSpans runs configs/kafka-gateway.yaml with exemplars on
// (EXEMPLARS_ENABLED) against real Kafka and Elasticsearch, scrapes /metrics in OpenMetrics
// text and in protobuf while spans flow, SIGKILLs the gateway midway and starts another in the
// same group on the same queue directory, and then looks up every exemplar seen: each names a
// span stored in Elasticsearch. A graph gateway (configs/graph-gateway.yaml, exemplars on, the
// same threshold) reads the same spans from a topic of its own, and every exemplar of its
// service graph histograms is found there too. The spans (esSpanBatch) mix fast errors, slow successes, spans
// of exactly the threshold and 1 ns under it among fast ones, in the same series, so an
// exemplar of a span the store branch drops would have been chosen without
// exemplars.slow_threshold: run with it at 0 (an overlay), the test finds exemplars of 5–40 ms
// successes missing from Elasticsearch.
func TestKafkaGatewayExemplarsOpenStoredSpans(t *testing.T) {
	broker := startKafka(t)
	esAddr, ix := startESIndex(t)
	topic := "store-exemplars"
	createTopic(t, topic, 4)
	storage := t.TempDir()
	start := func() *gateway {
		metrics, telemetry := freeAddr(t), freeAddr(t)
		env := map[string]string{
			"KAFKA_BROKERS":           broker,
			"KAFKA_TOPIC":             topic,
			"KAFKA_GROUP":             topic,
			"METRICS_ENDPOINT":        metrics,
			"HEALTH_ENDPOINT":         freeAddr(t),
			"TELEMETRY_PORT":          portOf(telemetry),
			"METRICS_FLUSH_INTERVAL":  "1s",
			"ES_ENDPOINT":             "http://" + esAddr,
			"ES_INDEX":                ix.index,
			"OTELCOL_RED_STORAGE_DIR": storage,
			"EXEMPLARS_ENABLED":       "true",
			"SLOW_THRESHOLD_NS":       strconv.FormatInt(int64(esSlowThreshold), 10),
		}
		return &gateway{
			Collector:    StartCollector(t, configPath("kafka-gateway.yaml"), env),
			metricsURL:   "http://" + metrics + "/metrics",
			telemetryURL: "http://" + telemetry + "/metrics",
		}
	}

	// The service graph's gateway reads the same spans from a topic of its own (as the agents'
	// graph topic carries them) and names in its exemplars the spans that the store gateway
	// stores: the same rule, on the same threshold.
	graphTopic := topic + "-graph"
	createTopic(t, graphTopic, 4)
	graph := startGraphGateway(t, broker, graphTopic, graphTopic, map[string]string{
		"EXEMPLARS_ENABLED": "true",
		"SLOW_THRESHOLD_NS": strconv.FormatInt(int64(esSlowThreshold), 10),
	})

	// The scraper reads whichever store gateway runs and the graph gateway, in both formats,
	// until stopped.
	var mu sync.Mutex
	current, generation := start(), "first"
	bySource := map[string]map[exemplarRef]bool{} // "first/text" … "second/protobuf" → spans named
	stop := make(chan struct{})
	scraped := make(chan struct{})
	go func() {
		defer close(scraped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
			mu.Lock()
			targets := map[string]string{generation: current.metricsURL, "graph": graph.metricsURL}
			mu.Unlock()
			for gen, url := range targets {
				for _, protobuf := range []bool{false, true} {
					refs, err := scrapeExemplars(url, protobuf)
					if err != nil {
						continue // the gateway is down or restarting
					}
					source := gen + "/text"
					if protobuf {
						source = gen + "/protobuf"
					}
					mu.Lock()
					if bySource[source] == nil {
						bySource[source] = map[exemplarRef]bool{}
					}
					for _, r := range refs {
						bySource[source][r] = true
					}
					mu.Unlock()
				}
			}
		}
	}()

	producer, err := datasenders.NewKafkaProducer([]string{broker}, topic)
	require.NoError(t, err)
	defer producer.Close()
	graphProducer, err := datasenders.NewKafkaProducer([]string{broker}, graphTopic)
	require.NoError(t, err)
	defer graphProducer.Close()
	run := newRunID(t)
	const batches, perBatch = 120, 100
	sent := map[exemplarRef]esSpan{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var killedAt time.Time
	for b := range batches {
		td, spans := esSpanBatch(run, b*perBatch, perBatch)
		require.NoError(t, producer.SendTraces(ctx, td))
		require.NoError(t, graphProducer.SendTraces(ctx, td))
		for _, s := range spans {
			sent[exemplarRef{traceID: s.traceID, spanID: s.spanID}] = s
		}
		if b == batches/2 {
			// Midway: the gateway dies without a word, with spans counted (and exemplars
			// scraped) whose offsets it may not have committed, and another takes its place;
			// spans keep coming while it starts.
			require.Positive(t, esWaitForCount(ix, 1, 60*time.Second), "no span reached Elasticsearch")
			mu.Lock()
			first := current
			mu.Unlock()
			first.Kill()
			killedAt = time.Now()
			second := start()
			mu.Lock()
			current, generation = second, "second"
			mu.Unlock()
		}
		time.Sleep(80 * time.Millisecond)
	}
	require.NoError(t, producer.Flush(ctx))
	require.NoError(t, graphProducer.Flush(ctx))
	killedAfter := time.Since(killedAt)

	var spans []esSpan
	for _, s := range sent {
		spans = append(spans, s)
	}
	kept := len(esKept(spans))
	docs := esWaitSettled(t, ix, kept, 2*time.Minute)
	// Two more flushes and scrapes of the last spans' exemplars.
	time.Sleep(3 * time.Second)
	close(stop)
	<-scraped

	stored := map[exemplarRef]bool{}
	for _, d := range docs {
		stored[exemplarRef{traceID: d.TraceID, spanID: d.SpanID}] = true
	}
	seen := map[exemplarRef]string{}
	perSource := map[string]int{}
	for source, refs := range bySource {
		perSource[source] = len(refs)
		for r := range refs {
			seen[r] = source
		}
	}
	var missing []string
	slowSuccesses := 0
	for ref, source := range seen {
		s, ours := sent[ref]
		if !stored[ref] {
			missing = append(missing, fmt.Sprintf("%s/%s (%s; ours %v, errored %v, %v)", ref.traceID, ref.spanID, source, ours, s.errored, s.duration))
		}
		if ours && !s.errored && s.duration >= esSlowThreshold {
			slowSuccesses++
		}
	}
	t.Logf("%d spans sent, %d documents stored (%d to keep), the load ran %v after the kill; %d spans named by exemplars, per scrape %v, %d of them slow successes",
		len(sent), len(docs), kept, killedAfter.Round(time.Second), len(seen), perSource, slowSuccesses)
	for _, source := range []string{"first/text", "first/protobuf", "second/text", "second/protobuf", "graph/text", "graph/protobuf"} {
		assert.Positive(t, perSource[source], "no exemplar scraped from %s", source)
	}
	assert.Positive(t, slowSuccesses, "no exemplar of a slow successful span: the threshold was not exercised")
	require.Empty(t, missing, "exemplars whose span is not in Elasticsearch")
}
