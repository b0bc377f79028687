package loadtest

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log"
	"net/http"
	"strconv"
	"sync"
	"time"
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
func runStaleness(ctx context.Context, p Probe, pc ProbeCollectors, pools *Pools, o Options, res *ProbeResult) error {
	if o.NewKafkaSink == nil || o.CreateTopic == nil {
		return errors.New("the staleness probe needs a Kafka sink and a topic creator")
	}
	shape := p.Shapes[0]
	pool, err := pools.Get(shape, p.SpansPerRequest)
	if err != nil {
		return err
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	topic := "testbed-" + p.Name + "-" + run
	if err := o.CreateTopic(ctx, topic, o.KafkaPartitions); err != nil {
		return fmt.Errorf("cannot create topic %q: %w", topic, err)
	}
	sink, err := o.NewKafkaSink(pool, o.KafkaBrokers, topic)
	if err != nil {
		return err
	}
	written, err := writeBacklog(ctx, pool, sink, p.Backlog, backlogWriters)
	if closeErr := sink.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("cannot write the backlog to topic %q: %w", topic, err)
	}
	log.Printf("%s: wrote %d spans to topic %s", p.Name, written, topic)

	c := pc.OursKafka
	pr := ProbeRun{Collector: "ours", Binary: c.Binary, Config: c.Config, Series: shape.Series(), LoadAverage: LoadAverage()}
	if err := stalenessRun(ctx, p, c, o, written, map[string]string{
		"KAFKA_BROKERS": o.KafkaBrokers, "KAFKA_TOPIC": topic, "KAFKA_GROUP": "testbed-" + p.Name + "-" + run,
	}, &pr); err != nil {
		pr.Error = joinErr(pr.Error, err.Error())
	}
	res.Runs = append(res.Runs, pr)
	return nil
}

func stalenessRun(ctx context.Context, p Probe, c Collector, o Options, written int64, kafkaEnv map[string]string, run *ProbeRun) error {
	env := probeEnv(p)
	for k, v := range kafkaEnv {
		env[k] = v
	}
	s, err := startSolo(ctx, c, o, p.Name+"-"+c.Name, env, p.pinned())
	if err != nil {
		return err
	}
	st := &Staleness{IntervalSeconds: o.FlushInterval.Seconds(), BacklogSpans: written}
	run.Staleness = st
	fw := newFlushWatch(ctx, s, s.watch.start, flushPollInterval)
	pw := watchPage(ctx, s.ep.metricsURL(), s.watch.start)

	first, done, err := followConsumption(ctx, s, written, o.KafkaTimeout)
	if err == nil {
		// Two more intervals: a flush due right at the end must show up too.
		wait(ctx, s, 2*o.FlushInterval)
	}
	end := time.Since(s.watch.start).Seconds()
	deliveries := fw.close()
	st.PageChanges, st.PageScrapesFailed = pw.close()
	if err == nil {
		st.ConsumeSeconds = done - first
		st.SpansPerSec = float64(written) / max(st.ConsumeSeconds, kafkaPollInterval.Seconds())
		st.Flushes = flushes(deliveries, o.FlushInterval)
		// Gaps count from the first span until one interval after the last: by then the flush
		// holding the last spans is due. Later, a collector with delta output has nothing to
		// send, and its silence is not lateness.
		until := min(end, done+st.IntervalSeconds)
		st.MaxGapSeconds = maxGap(flushTimes(st.Flushes), first, until)
		st.MaxLatenessSeconds = max(0, st.MaxGapSeconds-st.IntervalSeconds)
		st.ExpectedFlushes = int((until - first) / st.IntervalSeconds)
		st.MaxPageGapSeconds = maxGap(st.PageChanges, first, until)
		st.CallsCounted, err = countCalls(ctx, s, o, written, time.Minute)
		run.Phases = []Phase{{Name: "drain", Seconds: st.ConsumeSeconds, Spans: written, SpansPerSec: st.SpansPerSec}}
		run.Phases[0].RSSMaxMiB, run.Phases[0].RSSEndMiB = rssBetween(s.watch.Samples(), first, done+1)
		run.Phases[0].CPUPercent = cpuBetween(s.watch.Samples(), first, done+1)
	}
	return errors.Join(err, finishRun(s, run))
}

// followConsumption reads the collector's accepted-spans counter until it reaches written, and
// returns when the first span and the last were accepted (seconds since the collector started).
func followConsumption(ctx context.Context, s *solo, written int64, timeout time.Duration) (first, done float64, err error) {
	scraper := NewCountingScraper(5 * time.Second)
	defer scraper.Close()
	deadline := time.Now().Add(timeout)
	for {
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("backlog not consumed within %s", timeout)
		}
		if !wait(ctx, s, kafkaPollInterval) {
			return 0, 0, errors.New("collector killed or run interrupted while consuming")
		}
		if exited, exitErr := s.proc.Exited(); exited {
			return 0, 0, fmt.Errorf("%s exited while consuming: %w", s.c.Name, errOrExit(exitErr))
		}
		n, err := scraper.SumCounter(ctx, s.ep.telemetryURL(), acceptedSpansMetric)
		if err != nil {
			continue
		}
		now := time.Since(s.watch.start).Seconds()
		if n > 0 && first == 0 {
			first = now
		}
		if int64(n) >= written {
			return first, now, nil
		}
	}
}

// countCalls waits (limit at most) until the calls counters add up to written and returns
// their sum.
func countCalls(ctx context.Context, s *solo, o Options, written int64, limit time.Duration) (int64, error) {
	scraper := NewCountingScraper(limit)
	defer scraper.Close()
	deadline := time.Now().Add(limit)
	for {
		n, err := scraper.SumCounter(ctx, s.ep.metricsURL(), o.CallsMetric)
		if err == nil && int64(n) == written {
			return int64(n), nil
		}
		if time.Now().After(deadline) || !wait(ctx, s, time.Second) {
			if err != nil {
				return int64(n), fmt.Errorf("calls counters not read: %w", err)
			}
			return int64(n), fmt.Errorf("calls counters add up to %d, not the %d spans of the backlog", int64(n), written)
		}
	}
}

func flushTimes(fl []Delivery) []float64 {
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

func watchPage(ctx context.Context, url string, start time.Time) *pageWatch {
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
			sum, err := pageHash(ctx, client, url)
			if err != nil {
				if ctx.Err() == nil {
					w.failed++
				}
				continue
			}
			if sum != last {
				w.changes = append(w.changes, time.Since(start).Seconds())
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
	req.Header.Set("Accept", prometheusAccept)
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
