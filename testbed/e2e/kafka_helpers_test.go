//go:build integration

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/testservice"
	"github.com/otelcol-red/otelcol-red/testbed/datasenders"
)

// The gateway's RED metrics as the Prometheus exposition names them (spanmetrics today,
// tracemetrics + cachedprom keep the names).
const (
	callsFamily    = "traces_span_metrics_calls_total"
	durationFamily = "traces_span_metrics_duration_milliseconds"
)

// kafkaFlushInterval is the RED metrics flush interval the tests run the gateway with: short, so
// a count settles quickly, and long enough that a late duplicate shows up in the settle wait.
const kafkaFlushInterval = 500 * time.Millisecond

// startKafka starts the broker (a fresh cluster) and returns its address.
func startKafka(t *testing.T) string {
	t.Helper()
	return testservice.Start(t, "kafka")
}

// createTopic creates a topic with the given number of partitions through scripts/kafka.sh.
func createTopic(t *testing.T, name string, partitions int) {
	t.Helper()
	if _, err := testservice.Run("kafka", "create-topic", name, strconv.Itoa(partitions)); err != nil {
		t.Fatalf("cannot create topic %s: %v", name, err)
	}
}

// gateway is a bin/otelcol-red running configs/kafka-gateway.yaml.
type gateway struct {
	*Collector
	metricsURL   string // RED metrics
	telemetryURL string // the collector's own metrics (receiver counters)
}

// gatewayOverlay replaces the gateway's Elasticsearch exporter with a debug exporter: these
// tests are about the Kafka path, the Elasticsearch branch has tests of its own. The config
// overlay is merged over configs/kafka-gateway.yaml (the collector merges --config files in
// order), so everything else is the shipped file.
const gatewayOverlay = `
exporters:
  debug/store:
    verbosity: basic
service:
  pipelines:
    traces/store:
      exporters: [debug/store]
`

// pdataConnector and pdataPipeline give the gateway's kafka receiver a second output as pdata,
// for the tests' stock exporters: the gateway reads Kafka with the otlpwire_encoding extension,
// whose wire traces hold the message's bytes and no spans a stock exporter could see. A
// hotspotfilter whose one rule selects nothing materialises them and passes every span,
// synchronously, errors included (connector/hotspotfilter). Each overlay that needs them carries
// them in its own YAML (one document, one `service` key); merged twice, they are the same.
const (
	pdataConnector = `
connectors:
  hotspotfilter/pdata:
    rules:
      - name: none
        condition: "false"
`
	pdataPipeline = `
    traces/pdata:
      receivers: [kafka]
      exporters: [hotspotfilter/pdata]
`
)

// ledgerOverlay adds a pipeline on the same kafka receiver (as pdata: pdataConnector) that logs
// one line per span it is handed ("<name> <trace id> <span id>"), synchronously (no sending
// queue), so the log of a collector lists every span its receiver delivered, even from a process
// that has exited. A Prometheus counter of an exited process cannot be read any more; this ledger
// can. The collector's log sampling is off: it drops repeated entries and did drop ledger entries.
const ledgerOverlay = pdataConnector + `
exporters:
  debug/ledger:
    verbosity: normal
    sampling_initial: 1000000
    sampling_thereafter: 1
    sending_queue:
      enabled: false
service:
  telemetry:
    logs:
      sampling:
        enabled: false
  pipelines:` + pdataPipeline + `
    traces/ledger:
      receivers: [hotspotfilter/pdata]
      exporters: [debug/ledger]
`

// startGateway runs the gateway on broker/topic in consumer group group, every endpoint on a
// free port; overlays are extra config YAML merged over the gateway's.
func startGateway(t *testing.T, broker, topic, group string, overlays ...string) *gateway {
	t.Helper()
	metrics := freeAddr(t)
	telemetry := freeAddr(t)
	env := map[string]string{
		"KAFKA_BROKERS":           broker,
		"KAFKA_TOPIC":             topic,
		"KAFKA_GROUP":             group,
		"METRICS_ENDPOINT":        metrics,
		"HEALTH_ENDPOINT":         freeAddr(t),
		"TELEMETRY_PORT":          portOf(telemetry),
		"METRICS_FLUSH_INTERVAL":  kafkaFlushInterval.String(),
		"OTELCOL_RED_STORAGE_DIR": t.TempDir(),
		"ES_ENDPOINT":             "http://" + freeAddr(t),
	}
	return &gateway{
		Collector:    StartCollector(t, configPath("kafka-gateway.yaml"), env, overlayFiles(t, append([]string{gatewayOverlay}, overlays...)...)...),
		metricsURL:   "http://" + metrics + "/metrics",
		telemetryURL: "http://" + telemetry + "/metrics",
	}
}

// redKey is one RED series group the tests count: a service and a status code label value.
type redKey struct{ service, status string }

func (k redKey) String() string { return k.service + "/" + k.status }

// tally counts the spans of td per service and status code, as the calls counter labels them.
// The tests count what they produced themselves, independently of the generator's bookkeeping.
func tally(into map[redKey]int, td ptrace.Traces) {
	for _, rs := range td.ResourceSpans().All() {
		svc, _ := rs.Resource().Attributes().Get("service.name")
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				into[redKey{svc.AsString(), statusLabel(sp.Status().Code())}]++
			}
		}
	}
}

func statusLabel(c ptrace.StatusCode) string {
	switch c {
	case ptrace.StatusCodeError:
		return "STATUS_CODE_ERROR"
	case ptrace.StatusCodeOk:
		return "STATUS_CODE_OK"
	default:
		return "STATUS_CODE_UNSET"
	}
}

// fromLoad converts a datasenders run's per-service tally ("svc-1/error") to redKeys.
func fromLoad(per map[string]int64) map[redKey]int {
	out := map[redKey]int{}
	for k, v := range per {
		svc, st, _ := strings.Cut(k, "/")
		out[redKey{svc, "STATUS_CODE_" + strings.ToUpper(st)}] += int(v)
	}
	return out
}

func total(m map[redKey]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// scrapeCalls returns the calls counters per service and status, summed over span names.
func scrapeCalls(url string) (map[redKey]int, error) {
	fams, err := scrape(url)
	if err != nil {
		return nil, err
	}
	out := map[redKey]int{}
	f, ok := fams[callsFamily]
	if !ok {
		return out, nil
	}
	for _, m := range f.GetMetric() {
		var k redKey
		for _, lp := range m.GetLabel() {
			switch lp.GetName() {
			case "service_name":
				k.service = lp.GetValue()
			case "status_code":
				k.status = lp.GetValue()
			}
		}
		out[k] += int(m.GetCounter().GetValue())
	}
	return out, nil
}

// requireCalls waits until the calls counters at url equal want exactly (every key, and no key
// that want lacks), then waits a few flush intervals more and checks they still do, so a late
// duplicate fails the test too.
func requireCalls(t *testing.T, url string, want map[redKey]int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var got map[redKey]int
	for {
		var err error
		got, err = scrapeCalls(url)
		if err == nil && equalCounts(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls counters did not reach the expected values within %v (total %d, want %d):\n%s",
				timeout, total(got), total(want), diffCounts(got, want))
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(4 * kafkaFlushInterval)
	got, err := scrapeCalls(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	if !equalCounts(got, want) {
		t.Fatalf("calls counters changed after matching (total %d, want %d):\n%s", total(got), total(want), diffCounts(got, want))
	}
}

func equalCounts(got, want map[redKey]int) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func diffCounts(got, want map[redKey]int) string {
	keys := map[redKey]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	lines := make([]string, 0, len(keys))
	for k := range keys {
		mark := ""
		if got[k] != want[k] {
			mark = "  <--"
		}
		lines = append(lines, fmt.Sprintf("  %-28s got %6d want %6d%s", k, got[k], want[k], mark))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// telemetrySum returns the sum of a family of the collector's own metrics whose labels include
// want; -1 when the family is absent.
func telemetrySum(t *testing.T, url, family string, want map[string]string) float64 {
	t.Helper()
	fams, err := scrape(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	if _, ok := fams[family]; !ok {
		return -1
	}
	v, _ := SumSeries(fams, family, want)
	return v
}

// newRunID returns a random tag for the trace ids of one test run, so a ledger line can only
// match spans of this run.
func newRunID(t *testing.T) uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return binary.BigEndian.Uint64(b[:])
}

// ledger returns how many times each span index of run appears in a collector's ledger log
// (see ledgerOverlay): the debug exporter writes "<name> <trace id> <span id>" per span, and the
// generator puts the run id and the span index into the trace id.
func ledger(logs string, run uint64) map[int64]int {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], run)
	re := regexp.MustCompile(hex.EncodeToString(b[:]) + `([0-9a-f]{16}) [0-9a-f]{16}`)
	out := map[int64]int{}
	for _, m := range re.FindAllStringSubmatch(logs, -1) {
		i, err := strconv.ParseUint(m[1], 16, 64)
		if err != nil {
			continue
		}
		out[int64(i)-1]++ // the trace id carries the span index + 1
	}
	return out
}

// coverage compares the union of ledgers with spans 0..n-1: missing lists indices no ledger has
// (lost spans), extra counts deliveries beyond the first (duplicates).
func coverage(n int64, ledgers ...map[int64]int) (missing []int64, extra int) {
	seen := map[int64]int{}
	for _, l := range ledgers {
		for i, c := range l {
			seen[i] += c
		}
	}
	for i := int64(0); i < n; i++ {
		c := seen[i]
		if c == 0 {
			missing = append(missing, i)
			continue
		}
		extra += c - 1
	}
	return missing, extra
}

func ledgerTotal(l map[int64]int) int {
	n := 0
	for _, c := range l {
		n += c
	}
	return n
}

// ledgerCalls turns a ledger into per service/status counts with the generator's shape.
func ledgerCalls(l map[int64]int, shape datasenders.SpanShape) map[redKey]int {
	out := map[redKey]int{}
	for i, c := range l {
		st := "STATUS_CODE_UNSET"
		if shape.IsError(i) {
			st = "STATUS_CODE_ERROR"
		}
		out[redKey{shape.Service(i), st}] += c
	}
	return out
}

// requireLedgerComplete checks a running collector's ledger against its receiver's own count of
// accepted spans, so a ledger line that went missing is not mistaken for a lost span.
// runs lists every run whose spans the collector consumed.
func requireLedgerComplete(t *testing.T, g *gateway, runs ...uint64) {
	t.Helper()
	var accepted float64
	var logged int
	ok := waitFor(30*time.Second, func() bool {
		logs := g.Logs()
		logged = 0
		for _, run := range runs {
			logged += ledgerTotal(ledger(logs, run))
		}
		accepted = kafkaSpans(t, g.telemetryURL)
		return accepted == float64(logged)
	})
	if !ok {
		t.Fatalf("ledger has %d spans, the receiver accepted %v", logged, accepted)
	}
}

// hasPartitions tells whether a collector's kafka receiver was assigned partitions of topic: the
// receiver's client (franz-go) logs `"added": "<topic>[0 1 2]"` when a group session begins.
func hasPartitions(logs, topic string) bool {
	return regexp.MustCompile(`"added": "` + regexp.QuoteMeta(topic) + `\[[0-9 ]+\]`).MatchString(logs)
}

func head(s []int64, n int) []int64 {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// waitFor polls cond every 200 ms until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// runLoad runs datasenders.RunKafkaLoad in the background; the returned channel yields its
// result once it has finished and every message has its acknowledgement.
func runLoad(ctx context.Context, t *testing.T, load datasenders.KafkaLoad) <-chan datasenders.KafkaLoadResult {
	out := make(chan datasenders.KafkaLoadResult, 1)
	go func() {
		res, err := datasenders.RunKafkaLoad(ctx, load)
		if err != nil {
			t.Errorf("kafka load: %v", err)
		}
		out <- res
	}()
	return out
}

// kafkaSpans returns the spans a gateway's kafka receiver delivered, by its own telemetry: the
// receiver counts the spans of what its encoding returns (accepted_spans), which for the wire
// traces of the otlpwire_encoding extension (configs/kafka-gateway.yaml) is none; the extension
// counts the spans of the messages it decoded. The sum is the count with either encoding.
func kafkaSpans(t *testing.T, telemetryURL string) float64 {
	t.Helper()
	received := telemetrySum(t, telemetryURL, "otelcol_receiver_accepted_spans_total", map[string]string{"receiver": "kafka"})
	decoded := telemetrySum(t, telemetryURL, "otelcol_extension_otlpwire_encoding_spans_total", nil)
	if received < 0 && decoded < 0 {
		return -1 // neither is exported yet
	}
	return max(received, 0) + max(decoded, 0)
}
