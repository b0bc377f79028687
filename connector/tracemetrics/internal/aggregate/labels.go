package aggregate // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/aggregate"

import (
	"math"
	"time"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/hll"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/telemetry"
	"github.com/otelcol-red/otelcol-red/internal/hash"
)

// labelLimits is max_cardinality_per_label: per service and named dimension (a label), at most
// limit distinct values have series of their own; a new series with a value beyond them is
// counted, with every other attribute kept (service, span name, kind, status, the other
// dimensions), in the series whose value of that label is series.LabelOverflowValue. So when
// an ID goes into an attribute, the operations keep their series, error rates and durations;
// only that label stops telling the spans apart. Owned by the aggregator goroutine.
//
// A value is held while some series has it (a count of references, taken when a series is
// created and given back when it expires or gives up its place), so the values of series
// that come back keep them. Once a label has refused a value, it admits no new one, even
// where a held value expired, for a window (series_expiration, at least 5 flush intervals)
// after the last refusal: during an explosion the room of expiring IDs does not go to the
// next IDs, one series each; once the explosion has stopped for that long, new values get
// in again. Absent values are not values: a span without the attribute keeps its series.
//
// It runs where a batch series finds no series (a new identity), before aggregation_cardinality_limit
// and the caps: they count the series with the overflow value, which is one series per
// operation. A series found by its key never pays for it; a span of an overflowed label
// pays, per batch series, a pass over the key, a hash per limited value, a lookup in the
// held values and the key rewritten into a scratch buffer (no allocation).
//
// Memory: per service and label at most limit held values (16 bytes, in a table at most half
// full), allocated as they come; and per label two HyperLogLog windows of demand (offered and
// refused values, labelDemandPrecision: 40 KiB per label), whatever the values.
type labelLimits struct {
	max     int   // max_cardinality_per_label
	window  int64 // ns a label stays closed after a refusal
	names   []string
	famDims [series.MaxFamilies][]int16 // by family and dimension: the label index, -1 when not limited

	held [][]heldValues // by service id, by label; nil until the service has a value

	offered  []*hll.Window // by label: the distinct values offered, held or not
	refused  []*hll.Window // by label: the distinct values refused
	overflow uint64        // the hash of LabelOverflowValue's identity, never held

	spans []int32 // scratch: DimensionSpans
	key   []byte  // scratch: the rewritten key
}

// heldValues is the values of one label a service holds, by the hash of their identity.
type heldValues struct {
	slots       []heldValue // open addressing, linear probing; refs 0: empty
	n           int
	shift       uint8 // a hash's home slot: (hash × Fibonacci constant) >> shift
	closedUntil int64 // batch time until which no new value is admitted (a refusal)
}

type heldValue struct {
	hash uint64
	refs uint32 // series with this value
}

const (
	// labelDemandPrecision gives a relative standard error of 1.6% (internal/hll).
	labelDemandPrecision = 12
	// minClosedIntervals is the shortest a label stays closed, in flush intervals.
	minClosedIntervals = 5
)

// newLabelLimits returns the per-label limits of plan p at now; nil when off or when no
// family has a named dimension to limit.
func newLabelLimits(p *series.Plan, now int64) *labelLimits {
	if p.MaxPerLabel <= 0 {
		return nil
	}
	ll := &labelLimits{max: p.MaxPerLabel,
		window:   max(p.SeriesIdle, minClosedIntervals*int64(p.FlushInterval)),
		overflow: hash.Sum64(series.LabelOverflowIdentity())}
	ll.names = p.LimitedLabels()
	if len(ll.names) == 0 {
		return nil
	}
	for _, f := range p.Families {
		dims := make([]int16, len(f.Dims))
		for i, d := range f.Dims {
			dims[i] = int16(p.LabelIndex(d, i))
		}
		ll.famDims[f.Index] = dims
	}
	// The demand covers series_expiration as the series demand does (5 flush intervals when
	// series never expire, as delta series then).
	demand := time.Duration(max(p.SeriesIdle, minClosedIntervals*int64(p.FlushInterval)))
	for range ll.names {
		ll.offered = append(ll.offered, hll.NewWindow(labelDemandPrecision, demand, demandParts, now))
		ll.refused = append(ll.refused, hll.NewWindow(labelDemandPrecision, demand, demandParts, now))
	}
	return ll
}

// relabel returns key (a series key of family f of service svc, which has no series yet) with
// the values of the labels that are full replaced by the overflow value, and true; or key and
// false when every value may have a series. ts is the batch time.
func (ll *labelLimits) relabel(l *series.Layout, f *series.Family, svc uint32, key []byte, ts int64) ([]byte, bool) {
	dims := ll.famDims[f.Index]
	ll.spans = l.DimensionSpans(ll.spans[:0], key, f)
	var which uint64
	for i, li := range dims {
		if li < 0 {
			continue
		}
		v := key[ll.spans[2*i]:ll.spans[2*i+1]]
		if series.IsAbsent(v) {
			continue
		}
		h := hash.Sum64(v)
		if h == ll.overflow {
			continue
		}
		hv := ll.values(svc, li)
		if hv.find(h) >= 0 {
			continue
		}
		if hv.n < ll.max && ts >= hv.closedUntil {
			continue // admitted when the series is created (hold)
		}
		hv.closedUntil = ts + ll.window
		ll.offered[li].Add(h)
		ll.refused[li].Add(h)
		which |= 1 << i
	}
	if which == 0 {
		return key, false
	}
	ll.key = series.ReplaceDimensions(ll.key[:0], key, f, ll.spans, which)
	return ll.key, true
}

// hold counts the values of the new series with key (family f, service svc) as held.
func (ll *labelLimits) hold(l *series.Layout, f *series.Family, svc uint32, key []byte) {
	ll.each(l, f, key, func(li int16, h uint64) { ll.values(svc, li).add(h) })
}

// release gives back the values of series key (family f, service svc), which is going.
func (ll *labelLimits) release(l *series.Layout, f *series.Family, svc uint32, key []byte) {
	ll.each(l, f, key, func(li int16, h uint64) {
		if int(svc) < len(ll.held) && ll.held[svc] != nil {
			ll.held[svc][li].remove(h)
		}
	})
}

// offer records the values of series key (family f), which has its own series, in the
// demand: once per series and interval, as the series demand.
func (ll *labelLimits) offer(l *series.Layout, f *series.Family, key []byte) {
	ll.each(l, f, key, func(li int16, h uint64) { ll.offered[li].Add(h) })
}

// each calls fn with the label and value hash of every limited, present value of series key
// of family f, the overflow value excluded.
func (ll *labelLimits) each(l *series.Layout, f *series.Family, key []byte, fn func(li int16, h uint64)) {
	if series.IsOverflowKey(key) {
		return
	}
	dims := ll.famDims[f.Index]
	ll.spans = l.DimensionSpans(ll.spans[:0], key, f)
	for i, li := range dims {
		if li < 0 {
			continue
		}
		v := key[ll.spans[2*i]:ll.spans[2*i+1]]
		if series.IsAbsent(v) {
			continue
		}
		if h := hash.Sum64(v); h != ll.overflow {
			fn(li, h)
		}
	}
}

// values returns the held values of label li of service svc.
func (ll *labelLimits) values(svc uint32, li int16) *heldValues {
	if int(svc) >= len(ll.held) {
		ll.held = append(ll.held, make([][]heldValues, int(svc)+1-len(ll.held))...)
	}
	if ll.held[svc] == nil {
		ll.held[svc] = make([]heldValues, len(ll.names))
	}
	return &ll.held[svc][li]
}

// forget drops the values of a service id that is being freed (its series are gone).
func (ll *labelLimits) forget(svc uint32) {
	if int(svc) < len(ll.held) {
		ll.held[svc] = nil
	}
}

// publish moves the demand windows on to now and stores their estimates in tel.
func (ll *labelLimits) publish(now int64, tel *telemetry.Telemetry) {
	for li := range ll.names {
		ll.offered[li].Advance(now)
		ll.refused[li].Advance(now)
		tel.LabelDemand[li].Store(int64(math.Round(ll.offered[li].Estimate())))
		tel.LabelOverflowValues[li].Store(int64(math.Round(ll.refused[li].Estimate())))
	}
}

// bytes is the memory the held values take.
func (ll *labelLimits) bytes() int {
	n := 0
	for _, svc := range ll.held {
		for i := range svc {
			n += 16 * cap(svc[i].slots)
		}
	}
	return n
}

func (hv *heldValues) home(h uint64) int { return int((h * 0x9e3779b97f4a7c15) >> hv.shift) }

// find returns the slot of value h, or -1.
func (hv *heldValues) find(h uint64) int {
	if hv.n == 0 {
		return -1
	}
	mask := len(hv.slots) - 1
	for i := hv.home(h); hv.slots[i].refs != 0; i = (i + 1) & mask {
		if hv.slots[i].hash == h {
			return i
		}
	}
	return -1
}

// add takes a reference to value h, adding it if new.
func (hv *heldValues) add(h uint64) {
	if i := hv.find(h); i >= 0 {
		hv.slots[i].refs++
		return
	}
	if 2*(hv.n+1) > len(hv.slots) {
		hv.grow()
	}
	mask := len(hv.slots) - 1
	i := hv.home(h)
	for hv.slots[i].refs != 0 {
		i = (i + 1) & mask
	}
	hv.slots[i] = heldValue{hash: h, refs: 1}
	hv.n++
}

func (hv *heldValues) grow() {
	old := hv.slots
	hv.slots = make([]heldValue, max(8, 2*len(old)))
	hv.shift = uint8(64 - bitsOf(len(hv.slots)))
	hv.n = 0
	for _, v := range old {
		if v.refs != 0 {
			refs := v.refs
			hv.add(v.hash)
			hv.slots[hv.find(v.hash)].refs = refs
		}
	}
}

// remove gives back a reference to value h, dropping it at the last one.
func (hv *heldValues) remove(h uint64) {
	i := hv.find(h)
	if i < 0 {
		return
	}
	if hv.slots[i].refs--; hv.slots[i].refs > 0 {
		return
	}
	mask := len(hv.slots) - 1
	for j := (i + 1) & mask; hv.slots[j].refs != 0; j = (j + 1) & mask {
		home := hv.home(hv.slots[j].hash)
		if (j-home)&mask >= (j-i)&mask {
			hv.slots[i] = hv.slots[j]
			i = j
		}
	}
	hv.slots[i] = heldValue{}
	hv.n--
}
