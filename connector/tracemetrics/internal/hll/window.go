package hll

import "time"

// Window estimates the distinct hashes added during about the last d: n sketches, each
// collecting d/n of time, the oldest emptied and reused when a new part begins. An estimate
// is of their union, so it covers between (n-1)/n·d and d of history. With d = 0 it never
// forgets. Memory is n+1 sketches whatever is added.
//
// Add does not look at the clock (it is on the connector's hot path); the caller moves the
// window on with Advance, at least once per d/n for the parts to keep their length.
type Window struct {
	parts []*Sketch
	cur   int
	span  int64 // nanoseconds per part; 0: one part, never rotated
	began int64 // start of the current part
	union *Sketch
}

// NewWindow returns an empty window of n parts (at least 1) of d/n each, sketches of
// precision p, starting at now (Unix nanoseconds).
func NewWindow(p int, d time.Duration, n int, now int64) *Window {
	if d <= 0 {
		n = 1
	}
	n = max(n, 1)
	w := &Window{span: int64(d) / int64(n), began: now, union: New(p)}
	for range n {
		w.parts = append(w.parts, New(p))
	}
	return w
}

// Add records h in the current part.
func (w *Window) Add(h uint64) { w.parts[w.cur].Add(h) }

// Advance starts a new part for every part's length elapsed since the current one began,
// emptying the oldest ones.
func (w *Window) Advance(now int64) {
	if w.span <= 0 {
		return
	}
	for i := 0; i < len(w.parts) && now-w.began >= w.span; i++ {
		w.cur = (w.cur + 1) % len(w.parts)
		w.parts[w.cur].Reset()
		w.began += w.span
	}
	if now-w.began >= w.span { // idle for longer than the whole window: all parts are empty
		w.began = now
	}
}

// Estimate returns the estimated number of distinct hashes in the window's parts.
func (w *Window) Estimate() float64 {
	if len(w.parts) == 1 {
		return w.parts[0].Estimate()
	}
	w.union.CopyFrom(w.parts[0])
	for _, s := range w.parts[1:] {
		w.union.Merge(s)
	}
	return w.union.Estimate()
}
