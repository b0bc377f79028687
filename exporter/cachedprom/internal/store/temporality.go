package store // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"

import (
	"math"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// This file turns data points into cumulative series state.
//
// Deltas. A delta is a count for its interval, so it is added whenever it
// does not overlap what the series already holds: its start is at or after
// the previous point's timestamp. A start later than the previous end (a
// series that was idle for some intervals, as tracemetrics' delta output
// does) is added too; the stock exporter treats it as a restart and resets
// the series, which loses everything counted before. A delta that starts
// before the previous point's end overlaps it (a retry, a second writer):
// it is dropped and counted.
//
// Cumulative points of a series written by one OTLP series replace its
// state, older ones are ignored, as in the stock exporter. When several OTLP
// series render to the same Prometheus series (attributes that differ only
// in type or before sanitizing, or the overflow series past max_series),
// each writer's last point is kept and the series accumulates each writer's
// increase, so every count shows once.

// point is what the update of one data point needs to know about its
// metric and the series found for it (ingest.go fills it).
type point struct {
	t       *tables
	fam     uint32
	kind    Kind
	now     int64
	delta   bool
	counter bool // monotonic sum
	// nameHash is the hash of the metric's OTLP name and type: with the
	// identKey of a point's other parts it makes the point's ident.
	nameHash uint64

	id    uint32 // the row
	r     *seriesRow
	isNew bool
	ident uint64 // OTLP identity hash of the point
	// own: the point is the row's first writer and the row has no other
	// writers: it can be updated like the stock exporter updates a series.
	own bool
}

// createdStart returns a series' start time after a point starting at
// start was applied to it, as the stock exporter's accumulator keeps it: a
// point that replaces the series' state (its first, a cumulative point of
// its only writer, a summary's or an exponential histogram's last point)
// brings its own start; a point added to the state (a delta, the increase
// of one of several cumulative writers) keeps the earliest known start.
// The stock exporter starts a delta series over at a gap between deltas,
// which cachedprom adds instead, so the series keeps its first start there
// too.
func (p *point) createdStart(held, start int64) int64 {
	replaces := p.isNew || !p.delta && (p.own || p.kind == KindSummary || p.kind == KindExpHistogram)
	if replaces || held == 0 {
		return start
	}
	if start != 0 {
		return min(held, start)
	}
	return held
}

func numberValue(dp pmetric.NumberDataPoint) float64 {
	if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
		return float64(dp.IntValue())
	}
	return dp.DoubleValue()
}

// overlaps reports whether a delta point overlaps the previous point of its
// series, which ended at prev. Without a start time, an older or equal
// timestamp is the overlap.
func overlaps(start, ts pcommon.Timestamp, prev int64) bool {
	if start != 0 {
		return int64(start) < prev
	}
	return int64(ts) <= prev
}

// freshDelta reports whether a delta point adds to its series: it must not
// overlap the previous point of the same writer. A series with one writer
// compares with its own state. When a second OTLP series writes deltas to
// it (graph gateways writing one edge, each with its own writer identity),
// every writer's last timestamp is kept in the writers table, so each writer's
// intervals are checked against its own and a retry is still dropped, while
// writers whose intervals interleave all count. The overflow series takes
// every writer past max_series and keeps no state per writer: its deltas are
// added as they come.
func (p *point) freshDelta(start, ts pcommon.Timestamp) bool {
	t, r := p.t, p.r
	if r.flags&rowOverflow != 0 {
		return true
	}
	if p.own {
		if overlaps(start, ts, r.ts) {
			t.events[EventOutOfOrder]++
			return false
		}
		return true
	}
	if r.flags&rowMerged == 0 {
		// The first other writer: from now on the first writer is tracked
		// too, from its last point.
		t.writers[r.ident] = &writerState{row: p.id, ts: r.ts, delta: true}
		r.flags |= rowMerged
	}
	w := t.writers[p.ident]
	if w == nil {
		w = &writerState{row: p.id, delta: true}
		t.writers[p.ident] = w
	} else if overlaps(start, ts, w.ts) {
		t.events[EventOutOfOrder]++
		return false
	}
	w.ts = int64(ts)
	return true
}

// number applies a gauge or sum point.
func (p *point) number(dp pmetric.NumberDataPoint) bool {
	t, r := p.t, p.r
	v, ts := numberValue(dp), int64(dp.Timestamp())
	switch {
	case p.counter && !p.delta && !p.own:
		if !p.addIncrease(ts, v, 0, nil) {
			return false
		}
	case p.isNew:
		r.value, r.ts = v, ts
	case p.delta:
		if !p.freshDelta(dp.StartTimestamp(), dp.Timestamp()) {
			return false
		}
		r.value += v
		r.ts = max(r.ts, ts)
	default: // a gauge (last write wins) or the own cumulative counter
		if ts < r.ts {
			return false
		}
		r.value, r.ts = v, ts
	}
	if t.keepExemplars && t.families.at(p.fam).typ == TypeCounter {
		t.exemplars.set(p.id, dp.Exemplars(), 0)
	}
	return true
}

// addIncrease adds to a merged series the increase of the writer p.ident
// since its last cumulative point: value (number or sum), count and
// buckets. A value lower than the last one is a restart of that writer: its
// whole value is the increase. It returns false for an older point.
func (p *point) addIncrease(ts int64, value float64, count uint64, buckets *pcommon.UInt64Slice) bool {
	t, r := p.t, p.r
	if r.flags&(rowMerged|rowOverflow) == 0 {
		// The first other writer: from now on the first writer is tracked
		// too, starting from what the series holds.
		first := &writerState{row: p.id, ts: r.ts, value: r.value, count: r.count}
		if r.nbkt > 0 {
			first.buckets = t.buckets.load(nil, r)
		}
		t.writers[r.ident] = first
		r.flags |= rowMerged
	}
	w := t.writers[p.ident]
	if w == nil {
		w = &writerState{row: p.id}
		t.writers[p.ident] = w
	} else if ts < w.ts {
		return false
	}
	restart := value < w.value || count < w.count
	if p.kind == KindHistogram {
		restart = count < w.count // a sum may go down
	}
	if restart {
		w.value, w.count = 0, 0
		clear(w.buckets)
	}
	r.value += value - w.value
	r.count += count - w.count
	if buckets != nil {
		if int(r.nbkt) == buckets.Len() {
			dst := t.buckets.load(t.bkts[:0], r)
			for i := range dst {
				var prev uint64
				if i < len(w.buckets) {
					prev = w.buckets[i]
				}
				dst[i] += buckets.At(i) - prev
			}
			t.buckets.store(r, dst)
			t.bkts = dst
		} else {
			t.events[EventUnsupported]++ // bucket layouts differ: the buckets cannot be added
		}
		w.buckets = append(w.buckets[:0], buckets.AsRaw()...)
	}
	w.value, w.count, w.ts = value, count, ts
	r.ts = max(r.ts, ts)
	return true
}

// maxBuckets bounds the buckets of one explicit histogram point (a bucket
// arena chunk).
const maxBuckets = bucketChunk

// histogram applies an explicit histogram point.
func (p *point) histogram(dp pmetric.HistogramDataPoint) bool {
	t, r := p.t, p.r
	counts := dp.BucketCounts()
	if counts.Len() > maxBuckets {
		t.events[EventUnsupported]++
		if p.isNew {
			t.remove(p.id)
		}
		return false
	}
	ts := int64(dp.Timestamp())
	switch {
	case !p.delta && !p.own:
		if p.isNew {
			p.setHistogram(dp)
			r.value, r.count = 0, 0
			t.buckets.allocRow(r, r.nbkt)
		} else if t.bounds.sets[r.bounds].equal(dp.ExplicitBounds()) == false {
			t.events[EventUnsupported]++
			return false
		}
		return p.addIncrease(ts, dp.Sum(), dp.Count(), &counts)
	case p.isNew:
		p.setHistogram(dp)
	case p.delta:
		if !p.freshDelta(dp.StartTimestamp(), dp.Timestamp()) {
			return false
		}
		p.accumulateHistogram(dp)
	default:
		if ts < r.ts {
			return false
		}
		p.setHistogram(dp)
	}
	return true
}

// setHistogram replaces the series' state with the point's.
func (p *point) setHistogram(dp pmetric.HistogramDataPoint) {
	t, r := p.t, p.r
	r.ts = int64(dp.Timestamp())
	r.count, r.value = dp.Count(), dp.Sum()
	r.bounds = t.bounds.intern(dp.ExplicitBounds())
	counts := dp.BucketCounts()
	if int(r.nbkt) != counts.Len() || p.isNew {
		t.buckets.allocRow(r, uint32(counts.Len()))
	}
	dst := t.bkts[:0]
	for i := range counts.Len() {
		dst = append(dst, counts.At(i))
	}
	t.buckets.store(r, dst)
	t.bkts = dst
	if t.keepExemplars {
		t.exemplars.set(p.id, dp.Exemplars(), 0)
	}
}

// accumulateHistogram adds a delta point. As in the stock exporter, the
// newer point's bounds win and counts are only summed when the layouts are
// equal; the sum loses exemplars.
func (p *point) accumulateHistogram(dp pmetric.HistogramDataPoint) {
	t, r := p.t, p.r
	counts := dp.BucketCounts()
	if int(r.nbkt) != counts.Len() || !t.bounds.sets[r.bounds].equal(dp.ExplicitBounds()) {
		if !p.own {
			t.events[EventUnsupported]++ // another layout replaces what the series held
		}
		p.setHistogram(dp)
		delete(t.exemplars, p.id)
		return
	}
	r.count += dp.Count()
	r.value += dp.Sum()
	dst := t.buckets.load(t.bkts[:0], r)
	for i := range dst {
		dst[i] += counts.At(i)
	}
	t.buckets.store(r, dst)
	t.bkts = dst
	r.ts = max(r.ts, int64(dp.Timestamp()))
	delete(t.exemplars, p.id)
}

// expHistogram applies an exponential histogram point.
func (p *point) expHistogram(dp pmetric.ExponentialHistogramDataPoint) bool {
	t, r := p.t, p.r
	e := t.exp.rowOf(p.id)
	st := t.exp.load(e)
	population := dp.ZeroCount() + sumCounts(dp.Positive().BucketCounts()) + sumCounts(dp.Negative().BucketCounts())
	if dp.Scale() < minScale || population > dp.Count() || population < dp.Count() && !math.IsNaN(dp.Sum()) || !dp.HasSum() {
		// No exposition shows such a point: the text formats hide the
		// series (as client_golang refuses it, and as the stock exporter
		// refuses a point without a sum) and so does the protobuf body.
		// Stored all the same, so the series' state stays what the stock
		// exporter's would be: a delta without a sum leaves the sum of
		// deltas without one, as in its accumulator.
		t.events[EventUnsupported]++
	}
	set := func() {
		r.ts = int64(dp.Timestamp())
		r.count, r.value = dp.Count(), dp.Sum()
		st = expState{scale: dp.Scale(), zeroThresh: dp.ZeroThreshold(), population: population, hasSum: dp.HasSum(),
			pos: st.pos, neg: st.neg} // keep the blocks
		t.exp.reserve(&e.pos, &st.pos, dp.Positive().BucketCounts().Len())
		t.exp.reserve(&e.neg, &st.neg, dp.Negative().BucketCounts().Len())
		st.setBuckets(dp)
		t.exemplars.set(p.id, dp.Exemplars(), dp.Timestamp())
	}
	ts := int64(dp.Timestamp())
	switch {
	case p.isNew:
		set()
	case p.delta:
		if !p.freshDelta(dp.StartTimestamp(), dp.Timestamp()) {
			return false
		}
		// Merging buckets (downscaling to the smaller scale, widening the
		// zero bucket) moves counts between buckets but keeps their total,
		// which is all the text formats show; the protobuf exposition
		// shows the merged buckets.
		r.ts = max(r.ts, ts)
		st.addBuckets(dp, &t.expAdd)
		// The sum of deltas keeps the latest point's exemplars (each is
		// an observation the merged histogram holds), or the earlier ones
		// when it has none: with delta input, the default pipeline's,
		// dropping them at each merge would leave native histograms
		// without exemplars.
		if dp.Exemplars().Len() > 0 {
			t.exemplars.set(p.id, dp.Exemplars(), dp.Timestamp())
		}
		r.count += dp.Count()
		st.population += population
		if st.hasSum && dp.HasSum() {
			r.value += dp.Sum()
		} else {
			st.hasSum, r.value = false, 0
		}
	default: // cumulative: the last point wins, also between writers
		if ts < r.ts {
			return false
		}
		set()
	}
	t.exp.save(e, &st)
	return true
}

func sumCounts(c pcommon.UInt64Slice) uint64 {
	var n uint64
	for i := 0; i < c.Len(); i++ {
		n += c.At(i)
	}
	return n
}

// summary applies a summary point.
func (p *point) summary(dp pmetric.SummaryDataPoint) bool {
	t, r := p.t, p.r
	if !p.isNew && int64(dp.Timestamp()) < r.ts {
		return false
	}
	r.ts = int64(dp.Timestamp())
	r.count, r.value = dp.Count(), dp.Sum()
	qs := t.quantiles[p.id][:0]
	qv := dp.QuantileValues()
	for i := 0; i < qv.Len(); i++ {
		q := quantile{qv.At(i).Quantile(), qv.At(i).Value()}
		// client_golang keeps them in a map: the last of equal quantiles wins.
		if j := slices.IndexFunc(qs, func(e quantile) bool { return e.q == q.q }); j >= 0 {
			qs[j] = q
			continue
		}
		qs = append(qs, q)
	}
	slices.SortFunc(qs, func(a, b quantile) int {
		switch {
		case a.q < b.q:
			return -1
		case a.q > b.q:
			return 1
		}
		return 0
	})
	t.quantiles[p.id] = qs
	return true
}
