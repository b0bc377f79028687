//go:build integration

package e2e

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// esSlowThreshold is the SLOW_THRESHOLD_NS the store tests run configs/es-store.yaml with.
const esSlowThreshold = 500 * time.Millisecond

// esSpan is one span a test sent, with what the store branch must do with it.
type esSpan struct {
	traceID  string // hex, as the exporter writes TraceId
	spanID   string
	service  string
	name     string
	duration time.Duration
	errored  bool
	status   int       // the exporter's TraceStatus: 0 unset, 1 ok, 2 error
	keep     bool      // an error or at least esSlowThreshold long
	sentAt   time.Time // when the request carrying it was sent (only acknowledged spans are listed)
}

// esSpanBatch builds spans first..first+n-1 of a run. Every index maps to a fixed kind of span,
// so a test knows exactly which ones must be stored:
//   - i%10 == 0: a fast error
//   - i%10 == 3: a slow success (threshold + up to 600ms)
//   - i%30 == 9: a slow error
//   - i%20 == 6: lasts exactly the threshold (kept: the filter drops what is shorter)
//   - i%20 == 16: lasts 1ns less than the threshold (dropped)
//   - anything else: fast, unset or OK status (dropped)
//
// Trace IDs start with the run ID so spans of different runs never mix in one index.
func esSpanBatch(run uint64, first, n int) (ptrace.Traces, []esSpan) {
	td := ptrace.NewTraces()
	services := []string{"checkout", "cart", "redis-hot"}
	scopes := make([]ptrace.SpanSlice, len(services))
	for i, svc := range services {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", svc)
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("otelcol-red/e2e")
		scopes[i] = ss.Spans()
	}
	base := time.Now().Add(-time.Minute)
	spans := make([]esSpan, 0, n)
	for i := first; i < first+n; i++ {
		var tid pcommon.TraceID
		binary.BigEndian.PutUint64(tid[:8], run)
		binary.BigEndian.PutUint64(tid[8:], uint64(i))
		var sid pcommon.SpanID
		binary.BigEndian.PutUint64(sid[:], uint64(i)+1)

		want := esSpan{
			traceID:  hex.EncodeToString(tid[:]),
			spanID:   hex.EncodeToString(sid[:]),
			service:  services[i%len(services)],
			duration: time.Duration(1+i%40) * time.Millisecond,
		}
		switch {
		case i%10 == 0:
			want.errored, want.duration = true, 3*time.Millisecond
		case i%10 == 3:
			want.duration = esSlowThreshold + time.Duration(1+i%6)*100*time.Millisecond
		case i%30 == 9:
			want.errored, want.duration = true, esSlowThreshold+time.Second
		case i%20 == 6:
			want.duration = esSlowThreshold
		case i%20 == 16:
			want.duration = esSlowThreshold - 1
		}
		want.keep = want.errored || want.duration >= esSlowThreshold
		if want.service == "redis-hot" {
			want.name = "GET"
		} else {
			want.name = fmt.Sprintf("GET /%s/%d", want.service, i%7)
		}

		s := scopes[i%len(services)].AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(sid)
		s.SetName(want.name)
		s.SetKind(ptrace.SpanKindServer)
		start := base.Add(time.Duration(i) * time.Microsecond)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(want.duration)))
		switch {
		case want.errored:
			s.Status().SetCode(ptrace.StatusCodeError)
			s.Status().SetMessage("boom")
		case i%2 == 0:
			s.Status().SetCode(ptrace.StatusCodeOk)
		}
		want.status = int(s.Status().Code())
		spans = append(spans, want)
	}
	return td, spans
}

// esKept returns the spans the store branch must keep.
func esKept(spans []esSpan) []esSpan {
	var kept []esSpan
	for _, s := range spans {
		if s.keep {
			kept = append(kept, s)
		}
	}
	return kept
}

// esOTLPSender posts OTLP/HTTP protobuf requests to a collector.
type esOTLPSender struct {
	url string
	tr  *http.Transport
}

func newESOTLPSender(tb testing.TB, httpEndpoint string) *esOTLPSender {
	s := &esOTLPSender{url: "http://" + httpEndpoint + "/v1/traces", tr: &http.Transport{}}
	// Its own transport, closed at the end, so no idle connection outlives the test (goleak).
	tb.Cleanup(s.tr.CloseIdleConnections)
	return s
}

// send returns nil only when the collector answered 200, i.e. the spans are in the pipeline.
func (s *esOTLPSender) send(td ptrace.Traces) error {
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: s.tr, Timeout: 30 * time.Second}).Post(s.url, "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("OTLP export answered %d: %s", resp.StatusCode, tailOf(string(b), 300))
	}
	return nil
}

// esIndex talks to one index of the test Elasticsearch over plain HTTP.
type esIndex struct {
	base  string // http://host:port
	index string
	tr    *http.Transport
}

func newESIndex(tb testing.TB, addr, index string) *esIndex {
	ix := &esIndex{base: "http://" + addr, index: index, tr: &http.Transport{}}
	tb.Cleanup(ix.tr.CloseIdleConnections)
	return ix
}

// do sends a request and decodes a JSON answer into out (when not nil). A 404 is returned as
// errESNotFound, because an index the exporter has not created yet is an expected state.
func (ix *esIndex) do(method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, ix.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: ix.tr, Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusNotFound {
		return errESNotFound
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s answered %d: %s", method, path, resp.StatusCode, tailOf(string(b), 500))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

var errESNotFound = fmt.Errorf("not found")

// refresh makes every indexed document searchable now instead of after the refresh interval.
func (ix *esIndex) refresh() error {
	return ix.do(http.MethodPost, "/"+ix.index+"/_refresh", nil, nil)
}

// count refreshes and counts the documents of the index; a missing index counts 0.
func (ix *esIndex) count() (int, error) {
	if err := ix.refresh(); err != nil {
		if err == errESNotFound {
			return 0, nil
		}
		return 0, err
	}
	var out struct {
		Count int `json:"count"`
	}
	if err := ix.do(http.MethodGet, "/"+ix.index+"/_count", nil, &out); err != nil {
		return 0, err
	}
	return out.Count, nil
}

// esDoc is a span as the exporter writes it in the `none` mapping mode.
type esDoc struct {
	TraceID       string `json:"TraceId"`
	SpanID        string `json:"SpanId"`
	Name          string `json:"Name"`
	Duration      int64  `json:"Duration"` // microseconds
	TraceStatus   int    `json:"TraceStatus"`
	StatusMessage string `json:"TraceStatusDescription"`
	Service       string `json:"Resource.service.name"`
}

type esHits struct {
	Hits struct {
		Total struct {
			Value int `json:"value"`
		} `json:"total"`
		Hits []struct {
			Source esDoc `json:"_source"`
		} `json:"hits"`
	} `json:"hits"`
}

// all returns every document of the index, paging with the scroll API past the 10000 documents
// one search returns.
func (ix *esIndex) all() ([]esDoc, error) {
	if err := ix.refresh(); err != nil {
		return nil, err
	}
	var page struct {
		esHits
		ScrollID string `json:"_scroll_id"`
	}
	q := map[string]any{"size": 5000, "track_total_hits": true, "query": map[string]any{"match_all": map[string]any{}}}
	if err := ix.do(http.MethodPost, "/"+ix.index+"/_search?scroll=1m", q, &page); err != nil {
		return nil, err
	}
	total := page.Hits.Total.Value
	docs := make([]esDoc, 0, total)
	for len(page.Hits.Hits) > 0 {
		for _, h := range page.Hits.Hits {
			docs = append(docs, h.Source)
		}
		id := page.ScrollID
		page.Hits.Hits = nil
		if err := ix.do(http.MethodPost, "/_search/scroll", map[string]any{"scroll": "1m", "scroll_id": id}, &page); err != nil {
			return nil, err
		}
	}
	_ = ix.do(http.MethodDelete, "/_search/scroll", map[string]any{"scroll_id": page.ScrollID}, nil)
	if len(docs) != total {
		return nil, fmt.Errorf("scrolled %d documents of %d in %s", len(docs), total, ix.index)
	}
	return docs, nil
}

// byTraceID is the lookup users make: the documents of one trace. Dynamic mappings index strings
// as text with a .keyword sub-field; the exact lookup goes to the keyword.
func (ix *esIndex) byTraceID(traceID string) ([]esDoc, error) {
	var out esHits
	q := map[string]any{"size": 100, "query": map[string]any{"term": map[string]any{"TraceId.keyword": traceID}}}
	if err := ix.do(http.MethodPost, "/"+ix.index+"/_search", q, &out); err != nil {
		return nil, err
	}
	docs := make([]esDoc, len(out.Hits.Hits))
	for i, h := range out.Hits.Hits {
		docs[i] = h.Source
	}
	return docs, nil
}

func (ix *esIndex) delete() error {
	err := ix.do(http.MethodDelete, "/"+ix.index, nil, nil)
	if err == errESNotFound {
		return nil
	}
	return err
}

// esWaitForCount polls until the index holds at least want documents or timeout passes and
// returns the last count; the caller asserts exact numbers afterwards.
func esWaitForCount(ix *esIndex, want int, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	last := -1
	for {
		if n, err := ix.count(); err == nil {
			last = n
			if n >= want {
				return n
			}
		}
		if time.Now().After(deadline) {
			return last
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// esStoreEnv runs configs/es-store.yaml on free ports against index ix, with its sending queue in
// storageDir. It returns the environment and the URL of the collector's own metrics.
func esStoreEnv(tb testing.TB, esAddr, index, storageDir string) (map[string]string, string) {
	telemetry := freeAddr(tb)
	return map[string]string{
		"OTLP_GRPC_ENDPOINT":      freeAddr(tb),
		"OTLP_HTTP_ENDPOINT":      freeAddr(tb),
		"HEALTH_ENDPOINT":         freeAddr(tb),
		"TELEMETRY_PORT":          portOf(telemetry),
		"ES_ENDPOINT":             "http://" + esAddr,
		"ES_INDEX":                index,
		"SLOW_THRESHOLD_NS":       fmt.Sprint(esSlowThreshold.Nanoseconds()),
		"OTELCOL_RED_STORAGE_DIR": storageDir,
	}, "http://" + telemetry + "/metrics"
}

// esTestIndex names an index for one test run: lower case, as Elasticsearch requires.
func esTestIndex(t *testing.T) string {
	return strings.ToLower(fmt.Sprintf("e2e-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano()))
}

// esExporterMetric sums one of the exporterhelper's metrics for the elasticsearch exporter.
func esExporterMetric(tb testing.TB, url, family string) float64 {
	tb.Helper()
	v, _ := SumSeries(Scrape(tb, url), family, map[string]string{"exporter": "elasticsearch"})
	return v
}

// esStopWithGrace sends SIGTERM and, if the collector has not exited after grace, kills it,
// as a process supervisor does (Kubernetes waits 30 s by default). It reports whether the
// collector exited on its own.
func esStopWithGrace(c *Collector, grace time.Duration) bool {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return true
	case <-time.After(grace):
		c.Kill()
		return false
	}
}

// esCheckStored compares the documents of an index with the spans that must be there: each kept
// span at least once, no dropped span at all. It returns how many copies each span has.
func esCheckStored(t *testing.T, docs []esDoc, sent []esSpan) map[string]int {
	t.Helper()
	copies := map[string]int{}
	for _, d := range docs {
		copies[d.SpanID]++
	}
	var missing, unexpected []string
	known := make(map[string]bool, len(sent))
	for _, s := range sent {
		known[s.spanID] = true
	}
	for id := range copies {
		if !known[id] {
			unexpected = append(unexpected, id)
		}
	}
	for _, s := range sent {
		switch n := copies[s.spanID]; {
		case s.keep && n == 0:
			missing = append(missing, s.spanID)
		case !s.keep && n > 0:
			unexpected = append(unexpected, s.spanID)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d kept spans are missing from Elasticsearch, e.g. %v", len(missing), missing[:min(5, len(missing))])
	}
	if len(unexpected) > 0 {
		t.Errorf("%d spans that must be dropped are in Elasticsearch, e.g. %v", len(unexpected), unexpected[:min(5, len(unexpected))])
	}
	return copies
}

// esRedisSpanKind says what a span of esRedisBatch is, and so what the store branch does with it.
type esRedisSpanKind int

const (
	esRedisFast   esRedisSpanKind = iota // fast successful Redis call: within the service's budget or dropped
	esRedisError                         // Redis error: always stored
	esRedisSlow                          // Redis call of 15ms, over hotspotfilter's 10ms: always stored
	esServerFast                         // fast successful server span: never stored
	esServerError                        // server error: always stored
)

// esRedisBatch builds n spans of one service, mostly fast successful Redis client calls as a
// hotspot emits them. Per 50 spans: 1 Redis error, 1 slow Redis call, 2 fast server spans,
// 1 server error; the other 45 are fast Redis calls.
func esRedisBatch(run uint64, service string, first, n int) (ptrace.Traces, map[string]esRedisSpanKind) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", service)
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	kinds := make(map[string]esRedisSpanKind, n)
	now := time.Now()
	for i := first; i < first+n; i++ {
		var tid pcommon.TraceID
		binary.BigEndian.PutUint64(tid[:8], run)
		binary.BigEndian.PutUint64(tid[8:], uint64(i))
		var sid pcommon.SpanID
		binary.BigEndian.PutUint64(sid[:], uint64(i)+1)
		s := spans.AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(sid)
		kind, d := esRedisFast, 300*time.Microsecond
		switch i % 50 {
		case 0:
			kind = esRedisError
		case 25:
			kind, d = esRedisSlow, 15*time.Millisecond
		case 10, 30:
			kind, d = esServerFast, 2*time.Millisecond
		case 40:
			kind, d = esServerError, 2*time.Millisecond
		}
		if kind == esServerFast || kind == esServerError {
			s.SetName("GET /cart")
			s.SetKind(ptrace.SpanKindServer)
		} else {
			s.SetName("GET")
			s.SetKind(ptrace.SpanKindClient)
			s.Attributes().PutStr("db.system", "redis")
		}
		if kind == esRedisError || kind == esServerError {
			s.Status().SetCode(ptrace.StatusCodeError)
		}
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-d)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
		kinds[hex.EncodeToString(sid[:])] = kind
	}
	return td, kinds
}
