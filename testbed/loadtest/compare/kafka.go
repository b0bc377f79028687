package compare

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// runKafka writes one backlog to a fresh topic, starts both collectors on it, each in a group of
// its own, and times how long each takes to take the whole backlog.
func runKafka(ctx context.Context, sc Scenario, pool *harness.Pool, o Options, sides []*side, scraper *harness.Scraper, res *Result) error {
	if o.Kafka.NewSink == nil || o.Kafka.CreateTopic == nil {
		return errors.New("kafka scenario needs a Kafka sink and a topic creator")
	}
	backlog, err := o.Kafka.WriteBacklog(ctx, sc.Name, pool, sc.Backlog, o.Concurrency)
	if err != nil {
		return err
	}
	written := backlog.Written
	for _, s := range sides {
		s.out.Sent = written
	}

	start := time.Now()
	err = launchCollectors(sc, o, sides, map[string]func(*side) string{
		"KAFKA_BROKERS": func(*side) string { return o.Kafka.Brokers },
		"KAFKA_TOPIC":   func(*side) string { return backlog.Topic },
		// A group per collector: each reads the whole backlog, as if it were the only gateway.
		"KAFKA_GROUP": func(s *side) string { return "testbed-" + s.c.Name + "-" + backlog.Run },
	})
	if err != nil {
		return err
	}
	cpu0 := cpuTimes(sides)
	monitorDone := startMonitors(ctx, o, sides, scraper, start, func(s *side) int64 { return s.progress.Load() })

	// Follow consumption through each collector's own accepted-spans counters (the receiver's, or
	// the otlpwire_encoding extension's: harness.ConsumedSpans) from the moment the process runs:
	// the receiver consumes before the health check turns ready.
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
		case <-time.After(harness.KafkaPollInterval):
		}
		for i, s := range sides {
			if !spans[i].done.IsZero() {
				continue
			}
			if exited, exitErr := s.proc.Exited(); exited {
				pollErr = fmt.Errorf("%s exited while consuming: %w", s.c.Name, exitErr)
				break
			}
			n, err := harness.ConsumedSpans(ctx, scraper, s.ep.TelemetryURL())
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
			s.out.Error = harness.JoinErr(s.out.Error, "did not consume the whole backlog")
			continue
		}
		busy := spans[i].done.Sub(spans[i].first)
		s.out.SpansPerSec = float64(written) / max(busy, harness.KafkaPollInterval).Seconds()
		summarise(s, cpuDone[i]-cpu0[i], spans[i].done.Sub(start))
		res.Window = max(res.Window, busy)
	}
	if pollErr != nil {
		return pollErr
	}
	return drain(ctx, o, sides)
}
