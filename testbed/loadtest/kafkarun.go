package loadtest

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

// acceptedSpansMetric is the collector's own count of spans its receivers accepted; a Kafka
// scenario follows consumption with it because it moves in real time, unlike the calls counters
// that only move at each metrics flush.
const acceptedSpansMetric = "otelcol_receiver_accepted_spans_total"

// kafkaPollInterval spaces the reads of the accepted-spans counters; it bounds the error of the
// consumption time a Kafka scenario measures.
const kafkaPollInterval = 100 * time.Millisecond

// runKafka writes one backlog to a fresh topic, starts both collectors on it, each in a group of
// its own, and times how long each takes to take the whole backlog.
func runKafka(ctx context.Context, sc Scenario, pool *Pool, o Options, sides []*side, scraper *Scraper, res *Result) error {
	if o.NewKafkaSink == nil || o.CreateTopic == nil {
		return errors.New("kafka scenario needs a Kafka sink and a topic creator")
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	topic := "testbed-" + sc.Name + "-" + run
	if err := o.CreateTopic(ctx, topic, o.KafkaPartitions); err != nil {
		return fmt.Errorf("cannot create topic %q: %w", topic, err)
	}
	sink, err := o.NewKafkaSink(pool, o.KafkaBrokers, topic)
	if err != nil {
		return err
	}
	written, err := writeBacklog(ctx, pool, sink, sc.Backlog, o.Concurrency)
	if closeErr := sink.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("cannot write the backlog to topic %q: %w", topic, err)
	}
	log.Printf("%s: wrote %d spans to topic %s", sc.Name, written, topic)
	for _, s := range sides {
		s.out.Sent = written
	}

	start := time.Now()
	err = launchCollectors(sc, o, sides, map[string]func(*side) string{
		"KAFKA_BROKERS": func(*side) string { return o.KafkaBrokers },
		"KAFKA_TOPIC":   func(*side) string { return topic },
		// A group per collector: each reads the whole backlog, as if it were the only gateway.
		"KAFKA_GROUP": func(s *side) string { return "testbed-" + s.c.Name + "-" + run },
	})
	if err != nil {
		return err
	}
	cpu0 := cpuTimes(sides)
	monitorDone := startMonitors(ctx, o, sides, scraper, start, func(s *side) int64 { return s.progress.Load() })

	// Follow consumption through each collector's own accepted-spans counter from the moment the
	// process runs: the receiver consumes before the health check turns ready.
	type span struct{ first, done time.Time }
	spans := make([]span, len(sides))
	cpuDone := make([]float64, len(sides))
	deadline := time.Now().Add(o.KafkaTimeout)
	var pollErr error
	for remaining := len(sides); remaining > 0 && pollErr == nil; {
		if time.Now().After(deadline) {
			pollErr = fmt.Errorf("backlog not consumed within %s", o.KafkaTimeout)
			break
		}
		select {
		case <-ctx.Done():
			pollErr = ctx.Err()
		case <-time.After(kafkaPollInterval):
		}
		for i, s := range sides {
			if !spans[i].done.IsZero() {
				continue
			}
			if exited, exitErr := s.proc.Exited(); exited {
				pollErr = fmt.Errorf("%s exited while consuming: %w", s.c.Name, errOrExit(exitErr))
				break
			}
			n, err := scraper.SumCounter(ctx, s.ep.telemetryURL(), acceptedSpansMetric)
			if err != nil {
				continue // not listening yet
			}
			s.progress.Store(int64(n))
			now := time.Now()
			if n > 0 && spans[i].first.IsZero() {
				spans[i].first = now
			}
			if int64(n) >= written {
				spans[i].done = now
				if c, _, err := s.proc.Usage(); err == nil {
					cpuDone[i] = c
				}
				remaining--
			}
		}
	}
	if pollErr == nil {
		pollErr = waitHealthy(ctx, o, sides, scraper)
	}
	monitorDone()
	for i, s := range sides {
		if spans[i].done.IsZero() {
			s.out.Error = joinErr(s.out.Error, "did not consume the whole backlog")
			continue
		}
		busy := spans[i].done.Sub(spans[i].first)
		s.out.SpansPerSec = float64(written) / max(busy, kafkaPollInterval).Seconds()
		summarise(s, cpuDone[i]-cpu0[i], spans[i].done.Sub(start))
		res.Window = max(res.Window, busy)
	}
	if pollErr != nil {
		return pollErr
	}
	return drain(ctx, o, sides)
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
