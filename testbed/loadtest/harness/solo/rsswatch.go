package solo

import (
	"sync"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// rssWatch samples a collector's CPU and RSS every interval and kills it when its RSS passes the
// cap, so that a collector that grows without bound ends as a recorded result ("killed at X GiB
// after Y s") instead of taking down a host other jobs share.
type rssWatch struct {
	proc  *harness.Process
	start time.Time
	cap   uint64

	mu       sync.Mutex
	samples  []harness.Sample
	killedAt *harness.Sample
	lastCPU  float64
	lastAt   time.Time

	killed chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup
}

func newRSSWatch(proc *harness.Process, interval time.Duration, capBytes uint64) *rssWatch {
	w := &rssWatch{proc: proc, start: time.Now(), cap: capBytes, killed: make(chan struct{}), done: make(chan struct{})}
	w.lastCPU, _, _ = proc.Usage()
	w.lastAt = w.start
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-w.done:
				return
			case now := <-tick.C:
				if !w.sample(now) {
					return
				}
			}
		}
	}()
	return w
}

// sample takes one reading; it returns false once the process is gone.
func (w *rssWatch) sample(now time.Time) bool {
	c, rss, err := w.proc.Usage()
	if err != nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	smp := harness.Sample{
		At:         now.Sub(w.start).Seconds(),
		CPUPercent: (c - w.lastCPU) / now.Sub(w.lastAt).Seconds() * 100,
		RSSMiB:     float64(rss) / (1 << 20),
	}
	w.lastCPU, w.lastAt = c, now
	w.samples = append(w.samples, smp)
	if w.cap > 0 && rss > w.cap {
		w.proc.Kill()
		w.killedAt = &smp
		close(w.killed)
		return false
	}
	return true
}

// Killed is closed when the watch killed the process.
func (w *rssWatch) Killed() <-chan struct{} { return w.killed }

// close stops sampling and tells whether the process was killed over the cap.
func (w *rssWatch) close() bool {
	close(w.done)
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.killedAt != nil
}

// Samples returns a copy of the readings so far.
func (w *rssWatch) Samples() []harness.Sample {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]harness.Sample(nil), w.samples...)
}

// KilledAt returns the reading that passed the cap, if any.
func (w *rssWatch) KilledAt() (harness.Sample, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.killedAt == nil {
		return harness.Sample{}, false
	}
	return *w.killedAt, true
}

// RSSBetween returns the largest and the last RSS reading in [from, to) seconds since the start
// of the watch.
func RSSBetween(samples []harness.Sample, from, to float64) (maxMiB, lastMiB float64) {
	for _, s := range samples {
		if s.At >= from && s.At < to {
			maxMiB = max(maxMiB, s.RSSMiB)
			lastMiB = s.RSSMiB
		}
	}
	return maxMiB, lastMiB
}

// CPUBetween returns the mean CPU % of the readings in [from, to).
func CPUBetween(samples []harness.Sample, from, to float64) float64 {
	var sum float64
	var n int
	for _, s := range samples {
		if s.At >= from && s.At < to {
			sum += s.CPUPercent
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}
