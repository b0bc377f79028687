package compare

import (
	"context"
	"log"
	"sync"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// drain waits until each collector's calls counters add up to the spans it was sent, or
// DrainTimeout passes; what is still missing then is lost. Nothing can match before the next
// metrics flush, so the first check waits one flush interval: polling earlier would only render
// large pages for nothing and load the machine. Both collectors are checked in parallel, since a
// page of 100k series can take minutes to render on a busy machine.
func drain(ctx context.Context, o Options, sides []*side) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(o.FlushInterval + time.Second):
	}
	scraper := harness.NewCountingScraper(o.DrainTimeout)
	defer scraper.Close()
	deadline := time.Now().Add(o.DrainTimeout)
	var wg sync.WaitGroup
	for _, s := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lastErr error
			for {
				n, err := scraper.SumCounter(ctx, s.ep.MetricsURL(), o.CallsMetric)
				lastErr = err
				if err == nil {
					s.out.Counted = int64(n)
					s.out.Lost = s.out.Sent - s.out.Counted
					log.Printf("%s: counted %d of %d spans", s.c.Name, s.out.Counted, s.out.Sent)
					if s.out.Lost == 0 {
						return
					}
				} else {
					log.Printf("%s: %v", s.c.Name, err)
				}
				if time.Now().After(deadline) || ctx.Err() != nil {
					break
				}
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			if lastErr != nil {
				// Unverified is not the same as lost, but a run that cannot show it lost nothing fails.
				s.out.Error = harness.JoinErr(s.out.Error, "calls counters not read within the drain timeout: "+lastErr.Error())
				s.out.Lost = s.out.Sent - s.out.Counted
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}
