//go:build integration

package e2e

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Crashes of the store branch with a real Elasticsearch: the collector is SIGKILLed under load
// and restarted on the same queue directory. Every span it acknowledged (an OTLP 200, or a
// committed Kafka offset) and that the branch keeps must reach the index; what was in flight may
// arrive twice. The ledger is kept by the test itself: which requests were answered 200, which
// records the broker acknowledged.

// esCrashDuplicateBound bounds the copies a crash can add: spans carry no document ID, so a batch
// Elasticsearch indexed but the killed process had not yet removed from its disk queue is indexed
// again by the next process. At most num_consumers batches of max_size spans are in flight
// (sending_queue in configs/es-store.yaml and kafka-gateway.yaml: 4 × 5000).
const esCrashDuplicateBound = 4 * 5000

// esCrashServices is the number of services the crash load spreads its spans over.
const esCrashServices = 20

// esCrashBatch builds spans first..first+n-1 of a run over esCrashServices services. Every
// tenth span is an error (stored); the others are fast successes (dropped by the filter). The
// trace ID carries the run and the span index, so a document names the span it stores.
func esCrashBatch(run uint64, first, n int) ptrace.Traces {
	td := ptrace.NewTraces()
	scopes := make([]ptrace.SpanSlice, esCrashServices)
	for i := range scopes {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "svc-"+strconv.Itoa(i))
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("otelcol-red/e2e")
		scopes[i] = ss.Spans()
	}
	now := time.Now()
	for i := first; i < first+n; i++ {
		s := scopes[i%esCrashServices].AppendEmpty()
		var tid pcommon.TraceID
		binary.BigEndian.PutUint64(tid[:8], run)
		binary.BigEndian.PutUint64(tid[8:], uint64(i)+1)
		var sid pcommon.SpanID
		binary.BigEndian.PutUint64(sid[:], uint64(i)+1)
		s.SetTraceID(tid)
		s.SetSpanID(sid)
		s.SetName("GET /item/" + strconv.Itoa(i%7))
		s.SetKind(ptrace.SpanKindServer)
		d := time.Duration(1+i%50) * time.Millisecond
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-d)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
		if esCrashIsError(int64(i)) {
			s.Status().SetCode(ptrace.StatusCodeError)
			s.Status().SetMessage("boom")
		}
	}
	return td
}

func esCrashIsError(i int64) bool { return i%10 == 0 }

// esRunCopies counts the documents of run per span index (from the trace ID, which the
// generators of esCrashBatch and datasenders.SpanShape fill with run and index+1). Documents of
// other runs are reported as foreign.
func esRunCopies(docs []esDoc, run uint64) (copies map[int64]int, foreign int) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], run)
	prefix := hex.EncodeToString(b[:])
	copies = map[int64]int{}
	for _, d := range docs {
		if len(d.TraceID) != 32 || d.TraceID[:16] != prefix {
			foreign++
			continue
		}
		i, err := strconv.ParseUint(d.TraceID[16:], 16, 64)
		if err != nil || i == 0 {
			foreign++
			continue
		}
		copies[int64(i)-1]++
	}
	return copies, foreign
}

// esCrashTally compares the documents with the spans that must be stored: lost are required
// spans without a document, duplicates the copies beyond the first, unwanted the documents of
// spans the branch drops.
type esCrashTally struct {
	required, stored, lost, duplicates, unwanted int
	firstLost                                    []int64
}

func esTally(copies map[int64]int, required func(i int64) bool, n int64, isError func(i int64) bool) esCrashTally {
	var t esCrashTally
	for i := int64(0); i < n; i++ {
		c := copies[i]
		if c > 1 {
			t.duplicates += c - 1
		}
		if c > 0 && !isError(i) {
			t.unwanted += c
		}
		if !required(i) {
			continue
		}
		t.required++
		if c == 0 {
			t.lost++
			if len(t.firstLost) < 10 {
				t.firstLost = append(t.firstLost, i)
			}
			continue
		}
		t.stored++
	}
	return t
}

// esWaitSettled waits until the index holds at least want documents and its count has not
// changed for a few seconds, then returns every document.
func esWaitSettled(t *testing.T, ix *esIndex, want int, timeout time.Duration) []esDoc {
	t.Helper()
	esWaitForCount(ix, want, timeout)
	last, stable := -1, 0
	for stable < 3 {
		time.Sleep(2 * time.Second)
		n, err := ix.count()
		require.NoError(t, err)
		if n == last {
			stable++
		} else {
			last, stable = n, 0
		}
	}
	docs, err := ix.all()
	require.NoError(t, err)
	return docs
}

// TestESStoreCrashKeepsAcknowledgedSpans runs configs/es-store.yaml under ~20k spans/s from 20
// services, SIGKILLs it after 6 s and starts a new collector on the same queue directory: every
// error span of a request the first collector answered 200 is in Elasticsearch.
func TestESStoreCrashKeepsAcknowledgedSpans(t *testing.T) {
	esAddr, ix := startESIndex(t)
	storage := t.TempDir()
	env, _ := esStoreEnv(t, esAddr, ix.index, storage)
	first := StartCollector(t, esStoreConfig, env)

	// Four senders of 500-span requests, each at up to 10 requests/s: ~20k spans/s offered.
	const senders, perRequest, every = 4, 500, 100 * time.Millisecond
	run := newRunID(t)
	var (
		mu    sync.Mutex
		acked = map[int64]bool{} // span index → its request was answered 200
		next  int
	)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := 0; w < senders; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sender := newESOTLPSender(t, env["OTLP_HTTP_ENDPOINT"])
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				mu.Lock()
				start := next
				next += perRequest
				mu.Unlock()
				err := sender.send(esCrashBatch(run, start, perRequest))
				mu.Lock()
				if err == nil {
					for i := start; i < start+perRequest; i++ {
						acked[int64(i)] = true
					}
				}
				mu.Unlock()
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()

	time.Sleep(6 * time.Second)
	first.Kill()
	// Requests after the kill fail (connection refused): they are not acknowledged, and stop
	// counting once the load stops.
	time.Sleep(500 * time.Millisecond)
	cancel()
	wg.Wait()

	mu.Lock()
	n := int64(next)
	ackedSpans := len(acked)
	mu.Unlock()
	require.Positive(t, ackedSpans, "the collector acknowledged no request before the kill")

	env2, telemetry2 := esStoreEnv(t, esAddr, ix.index, storage)
	StartCollector(t, esStoreConfig, env2)
	ackedErrors := 0
	for i := range acked {
		if esCrashIsError(i) {
			ackedErrors++
		}
	}
	docs := esWaitSettled(t, ix, ackedErrors, 2*time.Minute)
	require.Equal(t, 0.0, WaitForSum(t, telemetry2, "otelcol_exporter_queue_size",
		map[string]string{"exporter": "elasticsearch"}, 0, 60*time.Second), "spans left in the sending queue")
	require.Equal(t, 0.0, esExporterMetric(t, telemetry2, "otelcol_exporter_send_failed_spans_total"))

	copies, foreign := esRunCopies(docs, run)
	tally := esTally(copies, func(i int64) bool { return acked[i] && esCrashIsError(i) }, n, esCrashIsError)
	t.Logf("offered %d spans in 6 s, %d acknowledged; acknowledged errors: %s; %d documents in all (unacknowledged in-flight errors stored: %d); replayed by the second process: %v spans",
		n, ackedSpans, tally, len(docs), len(docs)-tally.duplicates-tally.stored,
		esExporterMetric(t, telemetry2, "otelcol_exporter_sent_spans_total"))
	assert.Zero(t, foreign, "documents of another run")
	assert.Zero(t, tally.unwanted, "documents of spans the filter drops")
	assert.LessOrEqual(t, tally.duplicates, esCrashDuplicateBound, "duplicate documents")
	require.Zero(t, tally.lost, "acknowledged error spans missing from Elasticsearch, e.g. span indices %v", tally.firstLost)
}

func (t esCrashTally) String() string {
	return fmt.Sprintf("required %d, stored %d, lost %d, duplicates %d", t.required, t.stored, t.lost, t.duplicates)
}

// esMissing counts the kept spans without a document.
func esMissing(copies map[string]int, kept []esSpan) int {
	n := 0
	for _, s := range kept {
		if copies[s.spanID] == 0 {
			n++
		}
	}
	return n
}

// dirBytes is the size of the files under dir.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	require.NoError(t, err)
	return n
}

// TestESStoreRejectsMalformedRequests sends OTLP/HTTP bodies that are not OTLP to the store
// branch: each is refused with 400, nothing reaches the index, and the collector goes on storing
// the valid request sent after them.
func TestESStoreRejectsMalformedRequests(t *testing.T) {
	esAddr, ix := startESIndex(t)
	env, telemetry := esStoreEnv(t, esAddr, ix.index, t.TempDir())
	c := StartCollector(t, esStoreConfig, env)
	url := "http://" + env["OTLP_HTTP_ENDPOINT"] + "/v1/traces"
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	for _, tc := range []struct {
		name, contentType, body string
	}{
		{"garbage protobuf", "application/x-protobuf", "\xff\xff\xff\xff not a protobuf"},
		{"truncated protobuf", "application/x-protobuf", "\x0a\x80\x01\x0a"},
		{"broken json", "application/json", `{"resourceSpans": [`},
	} {
		resp, err := client.Post(url, tc.contentType, strings.NewReader(tc.body))
		require.NoError(t, err, tc.name)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, tc.name)
	}
	sender := newESOTLPSender(t, env["OTLP_HTTP_ENDPOINT"])
	run := newRunID(t)
	require.NoError(t, sender.send(esCrashBatch(run, 0, 100)))
	docs := esWaitSettled(t, ix, 10, 60*time.Second)
	copies, foreign := esRunCopies(docs, run)
	tally := esTally(copies, esCrashIsError, 100, esCrashIsError)
	t.Logf("3 malformed requests refused; the valid one after them: %s", tally)
	assert.Zero(t, foreign)
	require.Zero(t, tally.lost)
	require.Zero(t, tally.duplicates)
	require.Equal(t, 100.0, WaitForSum(t, telemetry, "otelcol_receiver_accepted_spans_total",
		map[string]string{"receiver": "otlp"}, 100, 10*time.Second), "spans accepted: the valid request only")
	select {
	case <-c.done:
		t.Fatalf("the collector exited: %v", c.err)
	default:
	}
}
