//go:build integration

package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/testbed/datasenders"
)

// TestKafkaBacklogLateSpans drains a Kafka backlog into a gateway with late_spans on, scraped by a
// real Prometheus, and checks what rate() shows. Agents write spans to Kafka at a steady rate
// throughout; a gateway reads them for a while, is stopped (the outage) while spans keep coming
// (the backlog: spans whose end times are spread evenly over the outage), then starts again on
// the same addresses and consumer group, drains the topic and reads the live spans that keep
// coming. Prometheus scrapes it all along, so the restart is a counter reset, as in production.
//
// Under drop and separate, no rate() of the on-time calls series exceeds 1.1× the produced rate
// (the backlog does not show as a spike of its whole size), and every span is accounted for
// exactly: on-time calls + late calls (separate) or the dropped count (drop) = spans written,
// over both runs of the gateway. What is left of the backlog on time is its last `slack` less
// the gateway's start-up: at most slack × rate spans, which a rate over `window` shows as
// slack/window of the rate at most; the forms choose slack and window so that this stays under
// 0.1. count_now runs beside them as the control: its rate() must show the spike, or the test
// could not tell the policies apart.
//
// `make integration` runs the short form (~70 s), the three policies at once, each with its
// topic and gateway: 1000 spans/s, 17 s before the outage, the outage compressed (a backlog of
// 2 minutes of spans, end times spread over the 2 minutes before the restart, written as fast
// as the broker takes them while the live spans go on), 22 s after the restart, slack 1s, rate
// over 15s. Prometheus cannot see a drain that ends between two scrapes unless a window holds
// a sample from before the outage, which the compressed outage gives (a real outage longer than
// the window would hide the spike in the drain's first scrape, unless the drain lasts several
// scrapes, as it does in production). $OTELCOL_RED_LATE_BACKLOG (make test-late-spans-full: 10m)
// runs the form in real time: the gateway down for 10 minutes while 2000 spans/s go to
// Kafka (1.2M spans per policy, a drain of many scrapes), slack 10s (kafka-gateway.yaml's), rate
// over 2m, 2m10s before and 3 minutes after. Each form logs, per policy, a table of the rates
// Prometheus answered (connector/tracemetrics/README.md, "Late spans").
func TestKafkaBacklogLateSpans(t *testing.T) {
	f := lateForm{before: 17 * time.Second, backlog: 2 * time.Minute, after: 22 * time.Second,
		rate: 1000, slack: time.Second, window: 15 * time.Second, step: time.Second}
	if v := os.Getenv("OTELCOL_RED_LATE_BACKLOG"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "OTELCOL_RED_LATE_BACKLOG")
		f = lateForm{before: 2*time.Minute + 10*time.Second, outage: d, after: 3 * time.Minute,
			rate: 2000, slack: 10 * time.Second, window: 2 * time.Minute, step: 10 * time.Second}
	}
	broker := startKafka(t)
	policies := []string{"count_now", "drop", "separate"}
	runs := make([]*lateRun, len(policies))
	var targets []string
	for i, policy := range policies {
		runs[i] = &lateRun{policy: policy, form: f, broker: broker, metrics: freeAddr(t), telemetry: freeAddr(t)}
		targets = append(targets, fmt.Sprintf("%q, %q", runs[i].metrics, runs[i].telemetry))
	}
	// One Prometheus for every run, started first: it sees each gateway from its first flush.
	prom := startPrometheus(t, "prometheus", fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: late
    static_configs: [{targets: [%s]}]
`, strings.Join(targets, ", ")))
	// The runs go at once (t.Run from several goroutines; t.Parallel would be bound by -parallel).
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(r.policy, func(t *testing.T) { r.run(t, prom) })
		}()
	}
	wg.Wait()
}

// lateForm is one form of TestKafkaBacklogLateSpans.
type lateForm struct {
	before, after time.Duration // the gateway up before the outage, and after the restart
	// outage is how long the gateway is down while live spans go on; backlog, instead, is a
	// compressed outage: that long a backlog written at once, its end times spread over it.
	outage, backlog time.Duration
	rate            int           // spans per second, live (and in the backlog, by end time)
	slack           time.Duration // late_spans.slack
	window          time.Duration // of the rate() checked
	step            time.Duration // of the range queries
}

// lateRun is one policy's run: its topic, producer and gateway, on addresses chosen before
// Prometheus starts.
type lateRun struct {
	policy, broker     string
	form               lateForm
	metrics, telemetry string

	p             *datasenders.KafkaProducer
	next          atomic.Int64 // the next span index
	acked, failed atomic.Int64
	stop          context.CancelFunc
	wg            sync.WaitGroup
	// ends records the end time of every message written since markOutage, to count the
	// spans that are late whenever they are reduced.
	mu      sync.Mutex
	outage  bool
	ends    []time.Time
	endsLen []int
}

// lateSpanShape is the spans of the test: 5 services × 4 names, no errors (20 series).
var lateSpanShape = datasenders.SpanShape{Services: 5, SpanNames: 4}

// setEnds sets every span of td to end at end (each lasting 10 ms).
func setEnds(td ptrace.Traces, end time.Time) {
	e := pcommon.NewTimestampFromTime(end)
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				sp.SetEndTimestamp(e)
				sp.SetStartTimestamp(e - pcommon.Timestamp(10*time.Millisecond))
			}
		}
	}
}

// write writes n spans ending at end as one message.
func (r *lateRun) write(t *testing.T, n int, end time.Time) {
	first := r.next.Add(int64(n)) - int64(n)
	td := lateSpanShape.Traces(first, n)
	setEnds(td, end)
	r.mu.Lock()
	if r.outage {
		r.ends, r.endsLen = append(r.ends, end), append(r.endsLen, n)
	}
	r.mu.Unlock()
	err := r.p.ProduceTraces(context.Background(), td, func(err error) {
		if err != nil {
			r.failed.Add(int64(n))
			return
		}
		r.acked.Add(int64(n))
	})
	if err != nil {
		t.Errorf("produce: %v", err)
	}
}

// spansEndingBefore counts the spans written since the outage began that end before end.
func (r *lateRun) spansEndingBefore(end time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for i, e := range r.ends {
		if e.Before(end) {
			n += r.endsLen[i]
		}
	}
	return n
}

// startWriting writes spans ending now at the form's rate, paced by elapsed time, until
// stopWriting.
func (r *lateRun) startWriting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		start, written := time.Now(), int64(0)
		for {
			due := int64(time.Since(start).Seconds() * float64(r.form.rate))
			for written < due {
				n := int(min(50, due-written))
				r.write(t, n, time.Now())
				written += int64(n)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
}

// stopWriting stops the writer and waits until the broker acknowledged everything written.
func (r *lateRun) stopWriting(t *testing.T) int64 {
	r.stop()
	r.wg.Wait()
	require.NoError(t, r.p.Flush(context.Background()))
	require.Zero(t, r.failed.Load(), "spans the broker refused")
	return r.acked.Load()
}

// gateway starts the gateway of the run, on its addresses, with its policy.
func (r *lateRun) gateway(t *testing.T, topic string) *gateway {
	overlay := fmt.Sprintf(`
connectors:
  tracemetrics:
    late_spans:
      policy: %s
      slack: %s
`, r.policy, r.form.slack)
	env := map[string]string{
		"KAFKA_BROKERS":           r.broker,
		"KAFKA_TOPIC":             topic,
		"KAFKA_GROUP":             topic,
		"METRICS_ENDPOINT":        r.metrics,
		"HEALTH_ENDPOINT":         freeAddr(t),
		"TELEMETRY_PORT":          portOf(r.telemetry),
		"METRICS_FLUSH_INTERVAL":  kafkaFlushInterval.String(),
		"OTELCOL_RED_STORAGE_DIR": t.TempDir(),
		"ES_ENDPOINT":             "http://" + freeAddr(t),
	}
	return &gateway{
		Collector:    StartCollector(t, configPath("kafka-gateway.yaml"), env, overlayFiles(t, gatewayOverlay, overlay)...),
		metricsURL:   "http://" + r.metrics + "/metrics",
		telemetryURL: "http://" + r.telemetry + "/metrics",
	}
}

// settled waits until the gateway counted every span written so far, once, and returns what
// it counted.
func (r *lateRun) settled(t *testing.T, gw *gateway, want int64) lateTally {
	var tally lateTally
	ok := waitFor(2*time.Minute, func() bool {
		tally = readLateTally(gw)
		return tally.onTime+tally.late+tally.dropped == float64(want)
	})
	require.True(t, ok, "%s: on time %v + late %v + dropped %v, want %d in all", r.policy, tally.onTime, tally.late, tally.dropped, want)
	return tally
}

func (r *lateRun) run(t *testing.T, prom promAPI) {
	f := r.form
	topic := fmt.Sprintf("late-%s-%d", r.policy, time.Now().UnixNano())
	createTopic(t, topic, 4)
	var err error
	r.p, err = datasenders.NewKafkaProducer([]string{r.broker}, topic)
	require.NoError(t, err)
	t.Cleanup(r.p.Close)

	// Before the outage: the gateway up, spans live.
	begin := time.Now()
	gw := r.gateway(t, topic)
	r.startWriting(t)
	time.Sleep(f.before)
	// The writer pauses while the first gateway settles and stops, so that what it counted is
	// known exactly (a span it read after the last scrape would be counted nowhere visible).
	first := r.settled(t, gw, r.stopWriting(t))
	require.NoError(t, gw.Stop(t))

	// The outage: spans keep coming, into the backlog.
	outageStart := time.Now()
	r.mu.Lock()
	r.outage = true
	r.mu.Unlock()
	r.startWriting(t)
	if f.backlog > 0 {
		// Compressed: the backlog written at once, 50 spans a message, end times spread evenly
		// over the backlog's window before now.
		n := int(f.backlog.Seconds() * float64(f.rate))
		for i := 0; i < n; i += 50 {
			r.write(t, min(50, n-i), outageStart.Add(-f.backlog+time.Duration(float64(f.backlog)*float64(i)/float64(n))))
		}
		require.NoError(t, r.p.Flush(context.Background()))
	}
	time.Sleep(f.outage)
	restart := time.Now()
	gw = r.gateway(t, topic)
	time.Sleep(f.after)
	produced := r.stopWriting(t)
	second := r.settled(t, gw, produced-int64(first.onTime+first.late+first.dropped))
	t.Logf("%s: %d spans written, %d/s live; outage of %v (backlog %v), restart took %v",
		r.policy, produced, f.rate, restart.Sub(outageStart).Round(time.Second), f.backlog+f.outage,
		(time.Since(restart) - f.after).Round(100*time.Millisecond))

	// Every span once, across both runs of the gateway.
	lateSpans := first.lateSpans + second.lateSpans
	switch r.policy {
	case "drop":
		require.Zero(t, first.late+second.late, "late series under drop")
		require.Equal(t, lateSpans, first.dropped+second.dropped, "dropped = late and early spans")
	case "separate":
		require.Zero(t, first.dropped+second.dropped)
		require.Equal(t, lateSpans, first.late+second.late, "late series = late and early spans")
	case "count_now":
		require.Zero(t, first.late+second.late+first.dropped+second.dropped)
	}
	// The outage's spans that ended more than slack before the restart are late whenever
	// they are reduced.
	require.GreaterOrEqual(t, lateSpans, float64(r.spansEndingBefore(restart.Add(-f.slack))), "late spans counted")

	// Let Prometheus scrape the settled counters, then read the rates over the run.
	time.Sleep(3 * time.Second)
	end := time.Now()
	w := promDuration(f.window)
	sel := fmt.Sprintf(`instance=%q`, r.metrics)
	own := fmt.Sprintf(`instance=%q`, r.telemetry)
	queries := map[string]string{
		"on time": fmt.Sprintf(`sum(rate(%s{%s,late=""}[%s]))`, callsFamily, sel, w),
		"late":    fmt.Sprintf(`sum(rate(%s{%s,late="true"}[%s]))`, callsFamily, sel, w),
		"dropped": fmt.Sprintf(`sum(rate(otelcol_connector_tracemetrics_late_spans_total{%s,outcome="dropped"}[%s]))`, own, w),
	}
	rates := map[string]map[int64]float64{}
	for name, q := range queries {
		res, err := prom.queryRange(q, begin, end, f.step)
		require.NoError(t, err, q)
		rates[name] = map[int64]float64{}
		for _, s := range res {
			for _, v := range s.Values {
				rates[name][int64(parsePromTime(v[0]))] = parsePromValue(v[1])
			}
		}
	}
	peak := 0.0
	for _, v := range rates["on time"] {
		peak = math.Max(peak, v)
	}
	all := lateTally{lag: map[float64]float64{}}
	for le, n := range first.lag {
		all.lag[le] += n
	}
	for le, n := range second.lag {
		all.lag[le] += n
	}
	t.Logf("%s: rate over %s, gateway down from %ds to %ds\n%s", r.policy, w,
		int(outageStart.Sub(begin).Seconds()), int(restart.Sub(begin).Seconds()), rateTable(rates, begin, float64(f.rate)))
	t.Logf("%s: peak on-time rate %.0f/s = %.2f× the produced %d/s; late spans %.0f of %d; end-time lag of all spans p50 %s, p90 %s, p99 %s; before the outage (live only) p50 %s, p99 %s",
		r.policy, peak, peak/float64(f.rate), f.rate, lateSpans, produced, all.lagQuantile(0.5), all.lagQuantile(0.9), all.lagQuantile(0.99),
		first.lagQuantile(0.5), first.lagQuantile(0.99))
	require.NotEmpty(t, rates["on time"], "no on-time rate from Prometheus")
	if r.policy == "count_now" {
		// The spike the policies are for: without one the test could not tell them apart.
		require.Greater(t, peak, 1.1*float64(f.rate), "count_now shows the backlog as a spike")
		return
	}
	require.LessOrEqual(t, peak, 1.1*float64(f.rate), "on-time rate() under %s", r.policy)
}

// lateTally is what the gateway exposes of the run: calls on time and marked late, and its own
// late_spans counters and end-time lag buckets.
type lateTally struct {
	onTime, late       float64
	dropped, lateSpans float64
	lag                map[float64]float64 // le → cumulative count
}

func readLateTally(gw *gateway) lateTally {
	out := lateTally{lag: map[float64]float64{}}
	red, err := scrape(gw.metricsURL)
	if err != nil {
		return out
	}
	if f, ok := red[callsFamily]; ok {
		for _, m := range f.GetMetric() {
			if labelOf(m, "late") == "true" {
				out.late += m.GetCounter().GetValue()
			} else {
				out.onTime += m.GetCounter().GetValue()
			}
		}
	}
	own, err := scrape(gw.telemetryURL)
	if err != nil {
		return out
	}
	out.dropped, _ = SumSeries(own, "otelcol_connector_tracemetrics_late_spans_total", map[string]string{"outcome": "dropped"})
	out.lateSpans, _ = SumSeries(own, "otelcol_connector_tracemetrics_late_spans_total", nil)
	if f, ok := own["otelcol_connector_tracemetrics_span_end_lag_total"]; ok {
		for _, m := range f.GetMetric() {
			var le float64
			if _, err := fmt.Sscan(labelOf(m, "le"), &le); err != nil {
				le = math.Inf(1)
			}
			out.lag[le] = m.GetCounter().GetValue()
		}
	}
	return out
}

func labelOf(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

// lagQuantile returns the bucket bound under which q of the spans' lags fall, "≤ <le>s".
func (lt lateTally) lagQuantile(q float64) string {
	les := make([]float64, 0, len(lt.lag))
	for le := range lt.lag {
		les = append(les, le)
	}
	sort.Float64s(les)
	if len(les) == 0 {
		return "?"
	}
	total := lt.lag[les[len(les)-1]]
	for _, le := range les {
		if lt.lag[le] >= q*total {
			return fmt.Sprintf("≤ %gs", le)
		}
	}
	return "+Inf"
}

// promDuration writes d as a PromQL duration.
func promDuration(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	return fmt.Sprintf("%ds", int(d/time.Second))
}

func parsePromTime(v any) float64 {
	f, _ := v.(float64)
	return f
}

// rateTable renders the rates as a Markdown table: seconds since the gateway started, then each
// series, as a multiple of the produced rate.
func rateTable(rates map[string]map[int64]float64, start time.Time, produced float64) string {
	names := []string{"on time", "late", "dropped"}
	var ts []int64
	for t := range rates["on time"] {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	var b strings.Builder
	b.WriteString("| s after start | on-time rate | late rate | dropped rate |\n| --- | --- | --- | --- |\n")
	for _, t := range ts {
		fmt.Fprintf(&b, "| %d |", t-start.Unix())
		for _, n := range names {
			v, ok := rates[n][t]
			if !ok {
				b.WriteString(" – |")
				continue
			}
			fmt.Fprintf(&b, " %.0f/s (%.2f×) |", v, v/produced)
		}
		b.WriteString("\n")
	}
	return b.String()
}
