package probes

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

// backlogWriters is the number of messages written at once to build the staleness backlog: the
// producer writes each message synchronously, and small messages need many in flight to fill a
// topic in seconds rather than minutes.
const backlogWriters = 256

// pagePollInterval spaces the scrapes that look for a changed /metrics page, as a Prometheus
// scraping every second would see it.
const pagePollInterval = time.Second

// runStaleness writes a backlog of small messages to a fresh topic, starts our Kafka gateway on
// it, and records every flush while the gateway drains the backlog as fast as it can: a flush that
// waits behind ingest shows as a gap longer than the flush interval.
func runStaleness(ctx context.Context, p solo.Probe, cs solo.Collectors, pools *solo.Pools, o harness.Options, res *solo.ProbeResult) error {
	if o.Kafka.NewSink == nil || o.Kafka.CreateTopic == nil {
		return errors.New("the staleness probe needs a Kafka sink and a topic creator")
	}
	shape := p.Shapes[0]
	pool, err := pools.Get(shape, p.SpansPerRequest)
	if err != nil {
		return err
	}
	backlog, err := o.Kafka.WriteBacklog(ctx, p.Name, pool, p.Backlog, backlogWriters)
	if err != nil {
		return err
	}

	c := cs["ours"]
	pr := solo.ProbeRun{Collector: "ours", Binary: c.Binary, Config: c.Config, Series: shape.Series(), LoadAverage: harness.LoadAverage()}
	if err := stalenessRun(ctx, p, c, o, backlog.Written, map[string]string{
		"KAFKA_BROKERS": o.Kafka.Brokers, "KAFKA_TOPIC": backlog.Topic, "KAFKA_GROUP": "testbed-" + p.Name + "-" + backlog.Run,
	}, &pr); err != nil {
		pr.Error = harness.JoinErr(pr.Error, err.Error())
	}
	res.Runs = append(res.Runs, pr)
	return nil
}

func stalenessRun(ctx context.Context, p solo.Probe, c harness.Collector, o harness.Options, written int64, kafkaEnv map[string]string, run *solo.ProbeRun) error {
	env := p.Env()
	for k, v := range kafkaEnv {
		env[k] = v
	}
	s, err := solo.Start(ctx, c, o, p.Name+"-"+c.Name, env, p.Pinned())
	if err != nil {
		return err
	}
	st := &solo.Staleness{IntervalSeconds: o.FlushInterval.Seconds(), BacklogSpans: written}
	run.Staleness = st
	fw := solo.WatchFlushes(ctx, s, flushPollInterval)
	pw := watchPage(ctx, s)

	first, done, err := followConsumption(ctx, s, written, o.KafkaTimeout)
	if err == nil {
		// Two more intervals: a flush due right at the end must show up too.
		s.Wait(ctx, 2*o.FlushInterval)
	}
	end := s.Elapsed().Seconds()
	deliveries := fw.Close()
	st.PageChanges, st.PageScrapesFailed = pw.close()
	if err == nil {
		st.ConsumeSeconds = done - first
		st.SpansPerSec = float64(written) / max(st.ConsumeSeconds, harness.KafkaPollInterval.Seconds())
		st.Flushes = solo.Flushes(deliveries, o.FlushInterval)
		// Gaps count from the first span until one interval after the last: by then the flush
		// holding the last spans is due. Later, a collector with delta output has nothing to
		// send, and its silence is not lateness.
		until := min(end, done+st.IntervalSeconds)
		st.MaxGapSeconds = maxGap(flushTimes(st.Flushes), first, until)
		st.MaxLatenessSeconds = max(0, st.MaxGapSeconds-st.IntervalSeconds)
		st.ExpectedFlushes = int((until - first) / st.IntervalSeconds)
		st.MaxPageGapSeconds = maxGap(st.PageChanges, first, until)
		st.CallsCounted, err = countCalls(ctx, s, o, written, time.Minute)
		run.Phases = []solo.Phase{{Name: "drain", Seconds: st.ConsumeSeconds, Spans: written, SpansPerSec: st.SpansPerSec}}
		run.Phases[0].RSSMaxMiB, run.Phases[0].RSSEndMiB = solo.RSSBetween(s.Samples(), first, done+1)
		run.Phases[0].CPUPercent = solo.CPUBetween(s.Samples(), first, done+1)
	}
	return errors.Join(err, s.Finish(run))
}

// followConsumption reads the collector's accepted-spans counter until it reaches written, and
// returns when the first span and the last were accepted (seconds since the collector started).
func followConsumption(ctx context.Context, s *solo.Instance, written int64, timeout time.Duration) (first, done float64, err error) {
	scraper := harness.NewCountingScraper(5 * time.Second)
	defer scraper.Close()
	deadline := time.Now().Add(timeout)
	for {
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("backlog not consumed within %s", timeout)
		}
		if !s.Wait(ctx, harness.KafkaPollInterval) {
			return 0, 0, errors.New("collector killed or run interrupted while consuming")
		}
		if exited, exitErr := s.Exited(); exited {
			return 0, 0, fmt.Errorf("%s exited while consuming: %w", s.Name(), exitErr)
		}
		n, err := harness.ConsumedSpans(ctx, scraper, s.TelemetryURL())
		if err != nil {
			continue
		}
		now := s.Elapsed().Seconds()
		if n > 0 && first == 0 {
			first = now
		}
		if int64(n) >= written {
			return first, now, nil
		}
	}
}

func flushTimes(fl []solo.Delivery) []float64 {
	out := make([]float64, len(fl))
	for i, f := range fl {
		out[i] = f.At
	}
	return out
}

// maxGap returns the longest time between consecutive events of times within [from, to], counting
// from and to as bounds: a window without any event is one gap as long as the window.
func maxGap(times []float64, from, to float64) float64 {
	prev, longest := from, 0.0
	for _, t := range times {
		if t < from || t > to {
			continue
		}
		longest = max(longest, t-prev)
		prev = t
	}
	return max(longest, to-prev)
}

// pageWatch scrapes /metrics (gzip) every pagePollInterval and notes when the body changed.
// Only our exporter serves a cached body that stays byte for byte the same between flushes, so
// this applies to ours; it is what a Prometheus scraping every second would see.
type pageWatch struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	changes []float64
	failed  int
}

func watchPage(ctx context.Context, s *solo.Instance) *pageWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &pageWatch{cancel: cancel}
	client := &http.Client{Timeout: pagePollInterval * 5, Transport: &http.Transport{DisableCompression: true}}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		var last uint64
		tick := time.NewTicker(pagePollInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			sum, err := pageHash(ctx, client, s.MetricsURL())
			if err != nil {
				if ctx.Err() == nil {
					w.failed++
				}
				continue
			}
			if sum != last {
				w.changes = append(w.changes, s.Elapsed().Seconds())
				last = sum
			}
		}
	}()
	return w
}

func (w *pageWatch) close() ([]float64, int) {
	w.cancel()
	w.wg.Wait()
	return w.changes, w.failed
}

func pageHash(ctx context.Context, client *http.Client, url string) (uint64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", harness.PrometheusAccept)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %s", resp.Status)
	}
	h := fnv.New64a()
	if _, err := io.Copy(h, resp.Body); err != nil {
		return 0, err
	}
	return h.Sum64(), nil
}
