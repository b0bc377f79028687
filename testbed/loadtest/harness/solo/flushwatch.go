package solo

import (
	"context"
	"sync"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// sentPointsMetric is the exporter's own count of metric points it exported. Both distributions
// feed their metrics exporter through exporterhelper, so this counter moves exactly when a flush
// of the trace-to-metrics connector has been delivered, whatever the connector.
const sentPointsMetric = "otelcol_exporter_sent_metric_points_total"

// FlushWatch follows a collector's deliveries of metrics to its exporter by reading
// sentPointsMetric from its own telemetry every interval. A flush that the connector sends in
// several chunks shows as several deliveries close together.
type FlushWatch struct {
	mu         sync.Mutex
	deliveries []Delivery

	done chan struct{}
	wg   sync.WaitGroup
}

// WatchFlushes starts following s's deliveries, read every interval, until Close or ctx ends.
func WatchFlushes(ctx context.Context, s *Instance, interval time.Duration) *FlushWatch {
	f := &FlushWatch{done: make(chan struct{})}
	scraper := harness.NewCountingScraper(5 * time.Second)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer scraper.Close()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		var last float64
		for {
			select {
			case <-f.done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				n, err := scraper.SumCounter(ctx, s.TelemetryURL(), sentPointsMetric)
				if err != nil || n <= last {
					continue
				}
				d := Delivery{At: s.Elapsed().Seconds(), Points: int64(n - last)}
				last = n
				f.mu.Lock()
				f.deliveries = append(f.deliveries, d)
				f.mu.Unlock()
			}
		}
	}()
	return f
}

// Close stops the watch and returns the deliveries seen.
func (f *FlushWatch) Close() []Delivery {
	close(f.done)
	f.wg.Wait()
	return f.Snapshot()
}

// Snapshot returns the deliveries seen so far.
func (f *FlushWatch) Snapshot() []Delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Delivery(nil), f.deliveries...)
}

// Flushes groups deliveries into flushes: deliveries less than half an interval after the start of
// the current flush belong to it (the chunks of one flush).
func Flushes(deliveries []Delivery, interval time.Duration) []Delivery {
	var out []Delivery
	for _, d := range deliveries {
		if n := len(out); n > 0 && d.At-out[n-1].At < interval.Seconds()/2 {
			out[n-1].Points += d.Points
			continue
		}
		out = append(out, d)
	}
	return out
}
