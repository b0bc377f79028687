//go:build integration

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/internal/testservice"
	"github.com/otelcol-red/otelcol-red/testbed/datasenders"
)

// TestKafkaReceiverOneTrace is the distribution's Kafka contract: one OTLP-proto trace written
// to a topic of the real broker comes out of the built binary's kafka receiver as RED metrics.
func TestKafkaReceiverOneTrace(t *testing.T) {
	broker := startKafka(t)
	const topic = "one-trace"
	createTopic(t, topic, 1)
	gw := startGateway(t, broker, topic, "one-trace")

	p, err := datasenders.NewKafkaProducer([]string{broker}, topic)
	require.NoError(t, err)
	defer p.Close()

	td := checkoutTrace(9)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, p.SendTraces(ctx, td))

	requireCalls(t, gw.metricsURL, map[redKey]int{
		{"checkout", "STATUS_CODE_UNSET"}: 2,
		{"checkout", "STATUS_CODE_ERROR"}: 1,
	}, 30*time.Second)
	fams := Scrape(t, gw.metricsURL)
	got, n := SumSeries(fams, callsFamily, map[string]string{"service_name": "checkout", "span_name": "GET /cart"})
	assert.Equal(t, 1, n, "one series for GET /cart")
	assert.Equal(t, 2.0, got, "calls of GET /cart")
	durCount, _ := SumSeries(fams, durationFamily, map[string]string{"service_name": "checkout"})
	assert.Equal(t, 3.0, durCount, "duration histogram count")
}

// TestKafkaGatewayExactCounts writes N spans with known per-service counts, some of them errors,
// over several partitions; the calls counters equal the produced counts exactly, per service and
// status code, and so do the receiver's accepted-spans counter and the duration histograms.
func TestKafkaGatewayExactCounts(t *testing.T) {
	broker := startKafka(t)
	const topic = "exact-counts"
	createTopic(t, topic, 4)
	gw := startGateway(t, broker, topic, "exact-counts")

	p, err := datasenders.NewKafkaProducer([]string{broker}, topic)
	require.NoError(t, err)
	defer p.Close()

	// 5000 spans over 7 services, every 9th an error, 50 spans per message: 100 messages.
	shape := datasenders.SpanShape{Services: 7, SpanNames: 3, ErrorEvery: 9, RunID: newRunID(t)}
	const n, perMsg = 5000, 50
	want := map[redKey]int{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for first := 0; first < n; first += perMsg {
		td := shape.Traces(int64(first), perMsg)
		tally(want, td)
		require.NoError(t, p.ProduceTraces(ctx, td, func(err error) { assert.NoError(t, err) }))
	}
	require.NoError(t, p.Flush(ctx))
	require.Equal(t, n, total(want))
	require.Len(t, want, 14, "7 services × {unset, error}")

	requireCalls(t, gw.metricsURL, want, time.Minute)

	fams := Scrape(t, gw.metricsURL)
	for k, v := range want {
		got, _ := SumSeries(fams, durationFamily, map[string]string{"service_name": k.service, "status_code": k.status})
		assert.Equal(t, float64(v), got, "duration histogram count of %s", k)
	}
	assert.Equal(t, float64(n), kafkaSpans(t, gw.telemetryURL), "receiver accepted spans")
	assert.Equal(t, 0.0, telemetrySum(t, gw.telemetryURL, "otelcol_receiver_refused_spans_total",
		map[string]string{"receiver": "kafka"}), "receiver refused spans")
}

// TestKafkaMalformedMessage puts garbage between good messages on one partition: each garbage
// message is skipped (on_permanent_error: true marks it, so the partition does not stall) and
// counted by the receiver's unmarshal-failure counter, and every good span is counted once.
// The second case shows why the gateway sets on_permanent_error: without it (it then inherits
// on_error: false), the first garbage message stops its partition on that collector.
func TestKafkaMalformedMessage(t *testing.T) {
	broker := startKafka(t)
	garbage := [][]byte{
		[]byte("this is not protobuf"),
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		{0x0a, 0x7f, 0x01}, // a field that claims 127 bytes and has 1
	}
	const goodMessages, perMsg = 10, 20
	// produce writes good messages with a garbage message after the 1st, 4th and 7th; it returns
	// the expected counts of everything and of what precedes the first garbage message.
	produce := func(t *testing.T, topic string, shape datasenders.SpanShape) (all, beforeGarbage map[redKey]int) {
		p, err := datasenders.NewKafkaProducer([]string{broker}, topic)
		require.NoError(t, err)
		defer p.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		all, beforeGarbage = map[redKey]int{}, map[redKey]int{}
		for m := 0; m < goodMessages; m++ {
			td := shape.Traces(int64(m*perMsg), perMsg)
			tally(all, td)
			if m == 0 {
				tally(beforeGarbage, td)
			}
			require.NoError(t, p.SendTraces(ctx, td))
			if m%3 == 0 && m/3 < len(garbage) {
				require.NoError(t, p.SendRaw(ctx, garbage[m/3]))
			}
		}
		return all, beforeGarbage
	}

	t.Run("skipped", func(t *testing.T) {
		const topic = "malformed"
		// One partition, so the garbage sits between good messages in the order they are consumed.
		createTopic(t, topic, 1)
		gw := startGateway(t, broker, topic, topic)
		want, _ := produce(t, topic, datasenders.SpanShape{Services: 3, ErrorEvery: 5, RunID: newRunID(t)})

		requireCalls(t, gw.metricsURL, want, time.Minute)
		require.Equal(t, goodMessages*perMsg, total(want))
		assert.Equal(t, float64(len(garbage)), telemetrySum(t, gw.telemetryURL,
			"otelcol_kafka_receiver_unmarshal_failed_spans_total", map[string]string{"topic": topic}),
			"unmarshal failures counted by the receiver")
		assert.Equal(t, float64(goodMessages*perMsg), kafkaSpans(t, gw.telemetryURL), "accepted spans")
	})

	t.Run("stalls_without_on_permanent_error", func(t *testing.T) {
		const topic = "malformed-stall"
		createTopic(t, topic, 1)
		gw := startGateway(t, broker, topic, topic, `
receivers:
  kafka:
    message_marking:
      on_permanent_error: false
`)
		_, want := produce(t, topic, datasenders.SpanShape{Services: 3, ErrorEvery: 5, RunID: newRunID(t)})
		// The receiver stops at the garbage message: up to contrib v0.145.0 it paused the
		// partition and logged so; v0.165.1 returns the error to its partition worker and does
		// not mark the message, without a log line of its own. What a user sees is the same:
		// the failure is counted and nothing after it is consumed.
		require.True(t, waitFor(time.Minute, func() bool {
			fams, err := scrape(gw.telemetryURL)
			if err != nil {
				return false
			}
			n, _ := SumSeries(fams, "otelcol_kafka_receiver_unmarshal_failed_spans_total", map[string]string{"topic": topic})
			return n >= 1
		}), "the receiver did not count the garbage message")
		// Only the message before the first garbage one is counted, and it stays so.
		requireCalls(t, gw.metricsURL, want, time.Minute)
		time.Sleep(3 * kafkaFlushInterval)
		got, err := scrapeCalls(gw.metricsURL)
		require.NoError(t, err)
		assert.Equal(t, want, got, "nothing after the garbage message is consumed")
	})
}

// TestKafkaBrokerRestart stops the broker in the middle of a stream and starts it again on the
// same log dir: the producer and the receiver both reconnect and no span is lost. The receiver
// may deliver some spans twice (see the delivery guarantee in the README): the ledger of
// deliveries says exactly how many, and the calls counters must equal the ledger exactly.
func TestKafkaBrokerRestart(t *testing.T) {
	broker := startKafka(t)
	const topic = "broker-restart"
	createTopic(t, topic, 3)
	gw := startGateway(t, broker, topic, "broker-restart", ledgerOverlay)

	shape := datasenders.SpanShape{Services: 5, ErrorEvery: 7, RunID: newRunID(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n, rate = 8000, 1000
	done := runLoad(ctx, t, datasenders.KafkaLoad{
		Brokers: []string{broker}, Topic: topic,
		SpansPerSecond: rate, SpansPerMessage: 25, MaxSpans: n,
		Duration: 90 * time.Second, Shape: shape,
	})

	// Wait until the gateway counted part of the stream, so the outage is mid-stream for both
	// the producer and the consumer.
	require.True(t, waitFor(30*time.Second, func() bool {
		got, err := scrapeCalls(gw.metricsURL)
		return err == nil && total(got) >= 1500
	}), "gateway did not count the first spans")
	start := time.Now()
	testservice.Stop(t, "kafka")
	t.Logf("broker stopped in %v", time.Since(start))
	time.Sleep(3 * time.Second)
	start = time.Now()
	if _, err := testservice.Run("kafka", "resume"); err != nil {
		t.Fatalf("cannot resume kafka: %v", err)
	}
	t.Logf("broker resumed in %v", time.Since(start))

	res := <-done
	require.Equal(t, int64(0), res.Failed, "spans the broker never acknowledged")
	require.Equal(t, int64(n), res.Spans)

	var missing []int64
	ok := waitFor(time.Minute, func() bool {
		missing, _ = coverage(n, ledger(gw.Logs(), shape.RunID))
		return len(missing) == 0
	})
	requireLedgerComplete(t, gw, shape.RunID)
	require.True(t, ok, "%d spans lost, first: %v", len(missing), head(missing, 20))
	requireCalls(t, gw.metricsURL, ledgerCalls(ledger(gw.Logs(), shape.RunID), shape), time.Minute)
	_, dups := coverage(n, ledger(gw.Logs(), shape.RunID))
	t.Logf("%d spans produced, %d delivered twice", n, dups)
	assert.LessOrEqual(t, dups, redeliveryBound(rate), "spans delivered twice")
}

// redeliveryBound is how many spans a collector may deliver twice around a fault, at rate spans/s:
// with marking after processing, what was processed but not yet committed is read again. The
// receiver commits marked offsets every autocommit interval (1 s by default; after every fetched
// batch with autocommit disabled) and when it gives up partitions, so the window is one commit
// interval of traffic plus the fetch in flight; twice the rate of one second covers both.
func redeliveryBound(rate int) int { return 2 * rate }

// TestKafkaCollectorRestart stops the collector in the middle of a stream (SIGTERM, and a crash
// with SIGKILL) and starts a new one in the same consumer group. No span is lost: every produced
// span is in the union of both collectors' ledgers. Spans may be delivered twice, within
// redeliveryBound. The new collector's calls counters equal its own deliveries exactly (a
// restarted collector's counters start from zero, so the old one is counted by its ledger).
func TestKafkaCollectorRestart(t *testing.T) {
	broker := startKafka(t)
	for _, tc := range []struct {
		name string
		stop func(t *testing.T, c *Collector)
	}{
		{"sigterm", func(t *testing.T, c *Collector) {
			if err := c.Stop(t); err != nil {
				t.Errorf("collector did not exit cleanly on SIGTERM: %v", err)
			}
		}},
		{"sigkill", func(_ *testing.T, c *Collector) { c.Kill() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "collector-restart-" + tc.name
			createTopic(t, topic, 4)
			a := startGateway(t, broker, topic, topic, ledgerOverlay)

			shape := datasenders.SpanShape{Services: 4, ErrorEvery: 6, RunID: newRunID(t)}
			const n, rate = 8000, 1000
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			done := runLoad(ctx, t, datasenders.KafkaLoad{
				Brokers: []string{broker}, Topic: topic,
				SpansPerSecond: rate, SpansPerMessage: 20, MaxSpans: n,
				Duration: 90 * time.Second, Shape: shape,
			})
			require.True(t, waitFor(30*time.Second, func() bool {
				got, err := scrapeCalls(a.metricsURL)
				return err == nil && total(got) >= 2000
			}), "first collector did not count the first spans")
			start := time.Now()
			tc.stop(t, a.Collector)
			t.Logf("first collector stopped in %v", time.Since(start))
			aDeliveries := ledger(a.Logs(), shape.RunID)

			b := startGateway(t, broker, topic, topic, ledgerOverlay)
			res := <-done
			require.Equal(t, int64(0), res.Failed, "spans the broker never acknowledged")
			require.Equal(t, int64(n), res.Spans)

			var missing []int64
			ok := waitFor(time.Minute, func() bool {
				missing, _ = coverage(n, aDeliveries, ledger(b.Logs(), shape.RunID))
				return len(missing) == 0
			})
			requireLedgerComplete(t, b, shape.RunID)
			require.True(t, ok, "%d spans lost, first: %v", len(missing), head(missing, 20))
			bDeliveries := ledger(b.Logs(), shape.RunID)
			requireCalls(t, b.metricsURL, ledgerCalls(bDeliveries, shape), time.Minute)

			_, dups := coverage(n, aDeliveries, ledger(b.Logs(), shape.RunID))
			t.Logf("produced %d spans: first collector delivered %d, second %d, %d delivered twice",
				n, ledgerTotal(aDeliveries), ledgerTotal(bDeliveries), dups)
			assert.GreaterOrEqual(t, ledgerTotal(aDeliveries)+ledgerTotal(bDeliveries), n)
			assert.LessOrEqual(t, dups, redeliveryBound(rate), "spans delivered twice")
		})
	}
}

// TestKafkaScaleOut runs two collectors in one consumer group on a topic with six partitions.
// While both run, the sum of their calls counters equals what was produced, exactly. Then one is
// stopped mid-stream: the group rebalances its partitions to the other, and no span is lost.
func TestKafkaScaleOut(t *testing.T) {
	broker := startKafka(t)
	const topic, group = "scale-out", "scale-out"
	createTopic(t, topic, 6)
	a := startGateway(t, broker, topic, group, ledgerOverlay)
	b := startGateway(t, broker, topic, group, ledgerOverlay)

	// Produce only once the group gave both members partitions; otherwise the first member may
	// consume everything before the second one joins.
	require.True(t, waitFor(30*time.Second, func() bool {
		return hasPartitions(a.Logs(), topic) && hasPartitions(b.Logs(), topic)
	}), "the group did not assign partitions to both collectors")

	shape := datasenders.SpanShape{Services: 6, ErrorEvery: 8, RunID: newRunID(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Phase 1: both members consume; each counts its share, the shares add up to the total.
	p, err := datasenders.NewKafkaProducer([]string{broker}, topic)
	require.NoError(t, err)
	defer p.Close()
	const n1, perMsg = 3000, 20
	want := map[redKey]int{}
	for first := 0; first < n1; first += perMsg {
		td := shape.Traces(int64(first), perMsg)
		tally(want, td)
		require.NoError(t, p.ProduceTraces(ctx, td, func(err error) { assert.NoError(t, err) }))
	}
	require.NoError(t, p.Flush(ctx))
	var sum, ca, cb map[redKey]int
	ok := waitFor(time.Minute, func() bool {
		var errA, errB error
		ca, errA = scrapeCalls(a.metricsURL)
		cb, errB = scrapeCalls(b.metricsURL)
		if errA != nil || errB != nil {
			return false
		}
		sum = map[redKey]int{}
		for k, v := range ca {
			sum[k] += v
		}
		for k, v := range cb {
			sum[k] += v
		}
		return equalCounts(sum, want)
	})
	require.True(t, ok, "sum of both collectors' calls (total %d, want %d):\n%s", total(sum), total(want), diffCounts(sum, want))
	require.Positive(t, total(ca), "first collector consumed nothing: the group did not share the partitions")
	require.Positive(t, total(cb), "second collector consumed nothing: the group did not share the partitions")
	t.Logf("phase 1: %d spans, %d counted by the first collector and %d by the second", n1, total(ca), total(cb))

	// Phase 2: a stream during which the first collector leaves the group (SIGTERM). Its spans
	// carry a new run id, so the ledgers tell the phases apart.
	shape2 := shape
	shape2.RunID = newRunID(t)
	const n2, rate = 8000, 1000
	done := runLoad(ctx, t, datasenders.KafkaLoad{
		Brokers: []string{broker}, Topic: topic,
		SpansPerSecond: rate, SpansPerMessage: perMsg, MaxSpans: n2,
		Duration: 90 * time.Second, Shape: shape2,
	})
	require.True(t, waitFor(30*time.Second, func() bool {
		return ledgerTotal(ledger(a.Logs(), shape2.RunID))+ledgerTotal(ledger(b.Logs(), shape2.RunID)) >= 2500
	}), "the collectors did not consume the start of the second stream")
	start := time.Now()
	require.NoError(t, a.Stop(t), "first collector did not exit cleanly on SIGTERM")
	t.Logf("first collector stopped in %v", time.Since(start))
	res := <-done
	require.Equal(t, int64(0), res.Failed, "spans the broker never acknowledged")
	require.Equal(t, int64(n2), res.Spans)

	aDeliveries := ledger(a.Logs(), shape2.RunID)
	var missing []int64
	ok = waitFor(time.Minute, func() bool {
		missing, _ = coverage(n2, aDeliveries, ledger(b.Logs(), shape2.RunID))
		return len(missing) == 0
	})
	requireLedgerComplete(t, b, shape.RunID, shape2.RunID)
	require.True(t, ok, "%d spans lost in the rebalance, first: %v", len(missing), head(missing, 20))

	// The second collector's counters hold its phase-1 share plus everything it delivered in
	// phase 2, exactly; the first collector's phase-2 share is read from its ledger.
	bDeliveries := ledger(b.Logs(), shape2.RunID)
	wantB := ledgerCalls(bDeliveries, shape2)
	for k, v := range cb {
		wantB[k] += v
	}
	requireCalls(t, b.metricsURL, wantB, time.Minute)

	_, dups := coverage(n2, aDeliveries, bDeliveries)
	t.Logf("phase 2: %d spans, delivered %d by the first collector before it left and %d by the second, %d twice",
		n2, ledgerTotal(aDeliveries), ledgerTotal(bDeliveries), dups)
	assert.Equal(t, n1+n2+dups, total(ca)+ledgerTotal(aDeliveries)+total(wantB), "counted by both collectors")
	assert.LessOrEqual(t, dups, redeliveryBound(rate), "spans delivered twice")
}
