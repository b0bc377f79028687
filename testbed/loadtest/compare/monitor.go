package compare

import (
	"context"
	"sync"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// cpuTimes reads each side's CPU seconds so far.
func cpuTimes(sides []*side) []float64 {
	out := make([]float64, len(sides))
	for i, s := range sides {
		if c, _, err := s.proc.Usage(); err == nil {
			out[i] = c
		}
	}
	return out
}

// summarise fills the CPU and scrape figures of a side from its window.
func summarise(s *side, cpuSeconds float64, window time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.CPUPercent = cpuSeconds / window.Seconds() * 100
	if s.out.Sent > 0 {
		s.out.CPUSecondsPerMillion = cpuSeconds / (float64(s.out.Sent) / 1e6)
	}
	for _, smp := range s.out.Samples {
		s.out.RSSMaxMiB = max(s.out.RSSMaxMiB, smp.RSSMiB)
	}
	for _, sc := range s.out.Scrapes {
		if useful(sc) {
			s.out.ScrapesUseful++
		}
	}
	s.out.ScrapeP50 = harness.ToMillis(percentile(s.out.Scrapes, 50))
	s.out.ScrapeP99 = harness.ToMillis(percentile(s.out.Scrapes, 99))
	if n := len(s.out.Scrapes); n > 0 {
		s.out.ScrapeWireBytes = s.out.Scrapes[n-1].WireBytes
	}
}

// startMonitors starts the sampler (CPU, RSS, throughput every SampleInterval) and the scraper
// (every ScrapeInterval, both collectors at the same instant); the returned func stops both.
func startMonitors(ctx context.Context, o Options, sides []*side, scraper *harness.Scraper, start time.Time, progress func(*side) int64) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup

	wg.Add(1)
	go func() {
		defer wg.Done()
		type last struct {
			at       time.Time
			cpu      float64
			progress int64
		}
		prev := make([]last, len(sides))
		for i, s := range sides {
			c, _, _ := s.proc.Usage()
			prev[i] = last{at: start, cpu: c, progress: progress(s)}
		}
		tick := time.NewTicker(o.SampleInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				for i, s := range sides {
					c, rss, err := s.proc.Usage()
					if err != nil {
						continue
					}
					p := progress(s)
					dt := now.Sub(prev[i].at).Seconds()
					smp := harness.Sample{
						At:          now.Sub(start).Seconds(),
						CPUPercent:  (c - prev[i].cpu) / dt * 100,
						RSSMiB:      float64(rss) / (1 << 20),
						SpansPerSec: float64(p-prev[i].progress) / dt,
					}
					prev[i] = last{at: now, cpu: c, progress: p}
					s.mu.Lock()
					s.out.Samples = append(s.out.Samples, smp)
					s.mu.Unlock()
				}
			}
		}
	}()

	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(o.ScrapeInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				var scrapes sync.WaitGroup
				for _, s := range sides {
					scrapes.Add(1)
					go func() {
						defer scrapes.Done()
						at := time.Since(start)
						sc, err := scraper.Get(ctx, s.ep.MetricsURL(), nil)
						sc.At = at
						if err != nil {
							// A failed scrape is a gap in Prometheus: count it at the timeout, the
							// least it cost, so that it weighs on the percentiles.
							sc.Latency = o.ScrapeInterval
							sc.Failed = true
						}
						s.mu.Lock()
						s.out.Scrapes = append(s.out.Scrapes, sc)
						s.mu.Unlock()
					}()
				}
				scrapes.Wait()
			}
		}
	}()

	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}
