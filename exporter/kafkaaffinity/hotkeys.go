package kafkaaffinity // import "github.com/otelcol-red/otelcol-red/exporter/kafkaaffinity"

import (
	"sync"
	"sync/atomic"
	"time"
)

// hotKeys measures spans per key over an interval and decides each key's
// fan-out for the next interval. Ingest takes the read lock for a map lookup
// and adds to an atomic; only a key seen for the first time in an interval,
// and the tick at the end of the interval, take the write lock. There is no
// flush or scrape on this exporter's data path for it to contend with.
type hotKeys struct {
	threshold  float64 // spans per second; 0 disables detection
	interval   time.Duration
	fanout     int
	maxTracked int
	static     map[string]int

	mu     sync.RWMutex
	counts map[string]*atomic.Int64

	// detected is replaced whole at each tick, so readers never lock it.
	detected  atomic.Pointer[map[string]int]
	untracked atomic.Int64
}

func newHotKeys(cfg HotKeysConfig) *hotKeys {
	h := &hotKeys{
		threshold:  cfg.SpansPerSecond,
		interval:   cfg.Interval,
		fanout:     cfg.Fanout,
		maxTracked: cfg.MaxTrackedKeys,
		static:     make(map[string]int, len(cfg.Keys)),
		counts:     map[string]*atomic.Int64{},
	}
	for _, k := range cfg.Keys {
		h.static[k.Key] = k.Fanout
	}
	empty := map[string]int{}
	h.detected.Store(&empty)
	return h
}

// observe counts spans for key and returns the key's fan-out: 1 for a normal
// key, more for a hot one. It does not keep key.
func (h *hotKeys) observe(key []byte, spans int) int {
	if f, ok := h.static[string(key)]; ok {
		return f
	}
	if h.threshold == 0 {
		return 1
	}
	h.mu.RLock()
	c := h.counts[string(key)]
	h.mu.RUnlock()
	if c == nil {
		c = h.track(key)
	}
	if c != nil {
		c.Add(int64(spans))
	}
	if f, ok := (*h.detected.Load())[string(key)]; ok {
		return f
	}
	return 1
}

func (h *hotKeys) track(key []byte) *atomic.Int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.counts[string(key)]; c != nil {
		return c
	}
	if len(h.counts) >= h.maxTracked {
		h.untracked.Add(1)
		return nil
	}
	c := new(atomic.Int64)
	h.counts[string(key)] = c
	return c
}

// tick closes an interval of length elapsed: keys above the threshold are hot
// until the next tick, keys not seen are forgotten so the map follows the
// live key set. A caller that looked a counter up just before it was
// forgotten adds to the orphan: at most one request's spans go unmeasured,
// which can delay detection by one interval but never loses a span.
func (h *hotKeys) tick(elapsed time.Duration) {
	if h.threshold == 0 || elapsed <= 0 {
		return
	}
	hot := map[string]int{}
	h.mu.Lock()
	for k, c := range h.counts {
		n := c.Swap(0)
		if n == 0 {
			delete(h.counts, k)
			continue
		}
		if float64(n)/elapsed.Seconds() > h.threshold {
			hot[k] = h.fanout
		}
	}
	h.mu.Unlock()
	h.detected.Store(&hot)
}

// hotNow is the number of keys currently fanned out, listed or detected.
func (h *hotKeys) hotNow() int {
	n := len(h.static)
	for k := range *h.detected.Load() {
		if _, ok := h.static[k]; !ok {
			n++
		}
	}
	return n
}
