package probes

import (
	"context"
	"fmt"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

// flushPollInterval spaces the reads of the exporter's sent-points counter; it bounds the error
// of every flush time a probe reports.
const flushPollInterval = 200 * time.Millisecond

// countCalls waits (limit at most) until the calls counters add up to written and returns
// their sum.
func countCalls(ctx context.Context, s *solo.Instance, o harness.Options, written int64, limit time.Duration) (int64, error) {
	scraper := harness.NewCountingScraper(limit)
	defer scraper.Close()
	deadline := time.Now().Add(limit)
	for {
		n, err := scraper.SumCounter(ctx, s.MetricsURL(), o.CallsMetric)
		if err == nil && int64(n) == written {
			return int64(n), nil
		}
		if time.Now().After(deadline) || !s.Wait(ctx, time.Second) {
			if err != nil {
				return int64(n), fmt.Errorf("calls counters not read: %w", err)
			}
			return int64(n), fmt.Errorf("calls counters add up to %d, not the %d spans of the backlog", int64(n), written)
		}
	}
}
