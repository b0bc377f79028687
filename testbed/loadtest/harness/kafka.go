package harness

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// AcceptedSpansMetric is the collector's own count of spans its receivers accepted; a run that
// drains a Kafka backlog follows consumption with it because it moves in real time, unlike the
// calls counters that only move at each metrics flush.
const AcceptedSpansMetric = "otelcol_receiver_accepted_spans_total"

// WireSpansMetric is the otlpwire_encoding extension's count of the spans in the messages it
// decoded. The kafka receiver counts the spans of what its encoding returns, and the extension's
// wire traces hold none (they carry the message's bytes), so with the extension the receiver's
// AcceptedSpansMetric stays 0 and this one moves instead; it counts a message when it is decoded,
// just before the pipeline takes it.
const WireSpansMetric = "otelcol_extension_otlpwire_encoding_spans_total"

// ConsumedSpans returns the spans a collector's receivers delivered, by its own telemetry at url:
// AcceptedSpansMetric plus WireSpansMetric, which is the count whichever encoding the kafka
// receiver uses.
func ConsumedSpans(ctx context.Context, s *Scraper, url string) (float64, error) {
	sums, err := s.SumCounters(ctx, url, AcceptedSpansMetric, WireSpansMetric)
	if sums == nil {
		return 0, err
	}
	return sums[0] + sums[1], err
}

// KafkaPollInterval spaces the reads of the accepted-spans counters; it bounds the error of the
// consumption time a Kafka run measures.
const KafkaPollInterval = 100 * time.Millisecond

// Kafka is how the testbed reaches a broker: set up by the command, which knows how to start one.
type Kafka struct {
	Brokers    string
	Partitions int
	// CreateTopic makes a topic with the given partitions.
	CreateTopic func(ctx context.Context, topic string, partitions int) error
	// NewSink returns a sink that writes pool requests to topic as OTLP-proto messages.
	NewSink func(pool *Pool, brokers, topic string) (Sink, error)
}

// Backlog is a topic filled before the collectors that consume it start.
type Backlog struct {
	// Topic is a fresh topic, named after the run; Run is the suffix that makes it unique, for
	// the run's consumer groups to share.
	Topic, Run string
	// Written is the spans in the topic.
	Written int64
}

// WriteBacklog creates a fresh topic for the run called name and writes whole passes of pool to
// it, writers messages at a time, until at least spans spans are in it.
func (k Kafka) WriteBacklog(ctx context.Context, name string, pool *Pool, spans int64, writers int) (Backlog, error) {
	b := Backlog{Run: strconv.FormatInt(time.Now().UnixNano(), 36)}
	b.Topic = "testbed-" + name + "-" + b.Run
	if err := k.CreateTopic(ctx, b.Topic, k.Partitions); err != nil {
		return b, fmt.Errorf("cannot create topic %q: %w", b.Topic, err)
	}
	sink, err := k.NewSink(pool, k.Brokers, b.Topic)
	if err != nil {
		return b, err
	}
	b.Written, err = writeBacklog(ctx, pool, sink, spans, writers)
	if closeErr := sink.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return b, fmt.Errorf("cannot write the backlog to topic %q: %w", b.Topic, err)
	}
	log.Printf("%s: wrote %d spans to topic %s", name, b.Written, b.Topic)
	return b, nil
}

// writeBacklog writes whole pool passes until at least n spans are in the topic.
func writeBacklog(ctx context.Context, pool *Pool, sink Sink, n int64, concurrency int) (int64, error) {
	requests := (n + int64(pool.SpansPerRequest) - 1) / int64(pool.SpansPerRequest)
	var (
		next    atomic.Int64
		written atomic.Int64
		wg      sync.WaitGroup
		mu      sync.Mutex
		first   error
	)
	for range max(concurrency, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r := next.Add(1) - 1
				if r >= requests || ctx.Err() != nil {
					return
				}
				if err := sink.Send(ctx, int(r%int64(len(pool.Encoded)))); err != nil {
					mu.Lock()
					first = errors.Join(first, err)
					mu.Unlock()
					return
				}
				written.Add(int64(pool.SpansPerRequest))
			}
		}()
	}
	wg.Wait()
	return written.Load(), first
}
