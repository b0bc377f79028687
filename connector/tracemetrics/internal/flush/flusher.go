// Package flush is the flush stage of the tracemetrics connector: the pipeline's flush
// goroutine turns the delta buffer of an interval into pmetric.Metrics and sends it to the next
// consumer in chunks. With cumulative temporality it owns the running totals of every series
// (table.go); it decodes series keys into data point attributes, sharing the strings it decodes
// (strings.go).
package flush // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/flush"

import (
	"context"
	"runtime"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/telemetry"
	"github.com/otelcol-red/otelcol-red/internal/pipeline"
)

const scopeName = "tracemetricsconnector"

// ChunkDataPoints is the most data points one ConsumeMetrics call carries (4096 RED series:
// a calls point and a duration point each). An interval goes downstream in as many calls as
// it needs, so the pmetric.Metrics alive at once is bounded by the chunk instead of growing
// with the series count: every point of it is a pdata object with its own attribute map and
// bucket slices, several times the size of the series' state in the store. Chunks of a few
// thousand points keep the per-call cost downstream (a lock, a dirty mark) negligible.
const ChunkDataPoints = 8192

// Flusher is the pipeline's flush goroutine (internal/pipeline): it turns filled delta buffers
// into pmetric.Metrics and sends them downstream, so nothing it does holds up ConsumeTraces or
// the aggregator. For cumulative temporality it owns the running totals of every series.
// Series keys it reads from the aggregator's immutable key chunks (internal/aggregate's key
// arena); otherwise it shares no memory with the aggregator except the buffer it is handed.
type Flusher struct {
	*series.Plan // the configuration, derived once

	next   consumer.Metrics
	logger *zap.Logger
	tel    *telemetry.Telemetry

	chunkPoints int // data points per ConsumeMetrics call (deps.chunkPoints)

	resAttrs []pcommon.Map // by resource id; zero Map when free
	tables   []*flushTable
	built    int // data points built in this flush, for yielding
	strings  *stringCache
	scratch  []uint64
	orders   [][]uint32 // per family: ids to export grouped by resource (scratch)
	byRes    [][]int32  // per family: offsets of each resource's ids in orders
	pos      []int32
}

// New returns the flusher of plan p: it sends data points to next in calls of at most
// chunkPoints of them.
func New(p *series.Plan, next consumer.Metrics, logger *zap.Logger, tel *telemetry.Telemetry, chunkPoints int) *Flusher {
	f := &Flusher{
		Plan:        p,
		next:        next,
		logger:      logger,
		tel:         tel,
		byRes:       make([][]int32, len(p.Families)),
		strings:     newStringCache(stringCacheLimit),
		orders:      make([][]uint32, len(p.Families)),
		chunkPoints: chunkPoints,
	}
	for _, fam := range p.Families {
		f.tables = append(f.tables, &flushTable{fam: fam})
	}
	return f
}

var _ pipeline.Flusher[*series.DeltaBuffer] = (*Flusher)(nil)

// Flush sends the interval of buf downstream and empties buf for its next interval.
func (f *Flusher) Flush(buf *series.DeltaBuffer) {
	f.process(buf)
	buf.Reset()
}

func (f *Flusher) process(buf *series.DeltaBuffer) {
	began := time.Now()
	for _, nr := range buf.NewResources {
		f.resAttrs = series.Grow(f.resAttrs, int(nr.ID)+1)
		m := pcommon.NewMap()
		series.DecodeMap(buf.ResAttrs[nr.Attrs.Off:nr.Attrs.Off+nr.Attrs.N], m)
		f.resAttrs[nr.ID] = m
	}
	for fi, t := range f.tables {
		d := &buf.Fams[fi]
		t.keys = d.Keys
		for i := range d.NewSeries {
			t.add(&d.NewSeries[i], f.BucketsOf(t.fam), f.IsDelta)
		}
		// After the new series: a compaction at this swap moved them too.
		for _, mv := range d.Moved {
			t.keyRef[mv.ID] = mv.KeyRef
		}
		if !f.IsDelta {
			t.merge(d, f.BucketsOf(t.fam), f.ExpoSize)
		}
	}

	points := f.build(buf)

	for fi, t := range f.tables {
		d := &buf.Fams[fi]
		if f.IsDelta {
			for i := range d.Rows.Len() {
				t.start[d.Rows.At(i).ID] = buf.TS
			}
		}
		for _, id := range d.Expired {
			t.drop(id)
		}
	}
	for _, rid := range buf.ExpiredRes {
		f.resAttrs[rid] = pcommon.Map{}
	}
	f.tel.RecordFlush(time.Since(began), points)
	f.tel.Flushes.Add(1)
}

// group lists the ids of family fi to export, grouped by resource (a counting sort):
// the ids of resource rid are orders[fi][byRes[fi][rid]:byRes[fi][rid+1]].
func (f *Flusher) group(fi int, buf *series.DeltaBuffer) {
	t := f.tables[fi]
	d := &buf.Fams[fi]
	counts := series.Grow(f.byRes[fi][:0], len(f.resAttrs)+1)
	clear(counts)
	each := func(fn func(id uint32)) {
		if f.IsDelta {
			for i := range d.Rows.Len() {
				fn(d.Rows.At(i).ID)
			}
			return
		}
		for id, n := range t.keyLen {
			if n > 0 {
				fn(uint32(id))
			}
		}
	}
	each(func(id uint32) { counts[t.res[id]+1]++ })
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	ids := series.Grow(f.orders[fi][:0], int(counts[len(counts)-1]))
	pos := f.pos[:0]
	pos = append(pos, counts...)
	each(func(id uint32) {
		rid := t.res[id]
		ids[pos[rid]] = id
		pos[rid]++
	})
	f.pos = pos
	f.byRes[fi] = counts
	f.orders[fi] = ids
}

// build sends the interval's data points downstream in chunks of at most chunkPoints points
// (see chunkDataPoints) and returns how many it sent. A resource with more series than fit in
// the chunk is continued in the next one, under a copy of its resource.
func (f *Flusher) build(buf *series.DeltaBuffer) int {
	ts := pcommon.Timestamp(buf.TS)
	for fi := range f.tables {
		f.group(fi, buf)
	}
	idsOf := func(fi, rid int) []uint32 {
		if fi < 0 {
			return nil
		}
		c := f.byRes[fi]
		return f.orders[fi][c[rid]:c[rid+1]]
	}
	lay := &f.Layout
	sent, inChunk := 0, 0
	md := pmetric.NewMetrics()
	for rid := range f.resAttrs {
		calls, events := idsOf(lay.CallsFamily, rid), idsOf(lay.EventsFamily, rid)
		durations := idsOf(lay.DurationFamily, rid)
		for len(calls)+len(durations)+len(events) > 0 {
			room := f.chunkPoints - inChunk
			rm := md.ResourceMetrics().AppendEmpty()
			if f.CopyResource {
				f.resAttrs[rid].CopyTo(rm.Resource().Attributes())
			}
			sm := rm.ScopeMetrics().AppendEmpty()
			sm.Scope().SetName(scopeName)
			var part []uint32
			if part, calls = cut(calls, room); len(part) > 0 {
				room -= len(part)
				f.buildSums(sm.Metrics().AppendEmpty(), f.CallsName, lay.CallsFamily, part, buf, ts)
			}
			if part, durations = cut(durations, room); len(part) > 0 {
				room -= len(part)
				f.buildHistograms(sm.Metrics().AppendEmpty(), lay.DurationFamily, part, buf, ts)
			}
			if part, events = cut(events, room); len(part) > 0 {
				room -= len(part)
				f.buildSums(sm.Metrics().AppendEmpty(), f.EventsName, lay.EventsFamily, part, buf, ts)
			}
			inChunk = f.chunkPoints - room
			if room == 0 {
				f.send(md)
				sent += inChunk
				md, inChunk = pmetric.NewMetrics(), 0
			}
		}
	}
	if inChunk > 0 {
		f.send(md)
		sent += inChunk
	}
	return sent
}

// cut splits ids after at most n elements.
func cut(ids []uint32, n int) (head, tail []uint32) {
	n = min(n, len(ids))
	return ids[:n], ids[n:]
}

// send hands one chunk downstream. The chunk is not reused afterwards: the consumer contract
// lets the next consumer keep it (a queue or a batch processor does), so each chunk is a new
// pmetric.Metrics that lives only as long as the downstream holds it.
func (f *Flusher) send(md pmetric.Metrics) {
	if err := f.next.ConsumeMetrics(context.Background(), md); err != nil {
		f.logger.Error("Failed ConsumeMetrics", zap.Error(err))
		f.tel.ExportErrors.Add(1)
	}
}

// yield lets the aggregator and producers run: building a large flush is CPU-bound for
// seconds, and with two cores the Go scheduler would otherwise preempt it only every 10ms.
func (f *Flusher) yield() {
	if f.built++; f.built%2048 == 0 {
		runtime.Gosched()
	}
}

func (f *Flusher) startOf(t *flushTable, id uint32, r *series.DeltaRow) pcommon.Timestamp {
	if f.IsDelta && t.start[id] == 0 {
		return pcommon.Timestamp(r.First)
	}
	return pcommon.Timestamp(t.start[id])
}

// dataPoint is what every data point kind offers that appendPoints sets.
type dataPoint interface {
	SetStartTimestamp(pcommon.Timestamp)
	SetTimestamp(pcommon.Timestamp)
	Exemplars() pmetric.ExemplarSlice
	Attributes() pcommon.Map
}

// appendPoints appends one data point per series id to dps, with the parts every metric shares
// (timestamps, exemplars, attributes); fill sets the values of series id, whose interval row is
// r (nil when it had no span this interval) at index row.
func appendPoints[P dataPoint, S interface {
	EnsureCapacity(int)
	AppendEmpty() P
}](f *Flusher, dps S, fi int, ids []uint32, buf *series.DeltaBuffer, ts pcommon.Timestamp, fill func(dp P, id uint32, r *series.DeltaRow, row int)) {
	t, d := f.tables[fi], &buf.Fams[fi]
	dps.EnsureCapacity(len(ids))
	for _, id := range ids {
		f.yield()
		r, row := d.IntervalRow(id)
		dp := dps.AppendEmpty()
		dp.SetStartTimestamp(f.startOf(t, id, r))
		dp.SetTimestamp(ts)
		fill(dp, id, r, row)
		f.putExemplars(dp.Exemplars(), d, r, ts)
		f.PutAttributes(t.key(id), dp.Attributes(), f.strings)
	}
}

func (f *Flusher) buildSums(m pmetric.Metric, name string, fi int, ids []uint32, buf *series.DeltaBuffer, ts pcommon.Timestamp) {
	m.SetName(name)
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(f.Temporality())
	t := f.tables[fi]
	// A new cumulative series is exported with its count from its first flush on, like the
	// histogram. spanmetrics exports 0 first and the count from the next flush, so that
	// Prometheus' rate() sees a step from 0; but for a whole interval every new series then
	// shows 0 calls beside a histogram that counts them, and an alert on calls == 0 or an
	// error ratio misfires for every series of a burst at once. The start timestamp (the
	// series' creation) says where the count began, for consumers that read it.
	appendPoints(f, sum.DataPoints(), fi, ids, buf, ts, func(dp pmetric.NumberDataPoint, id uint32, r *series.DeltaRow, _ int) {
		if f.IsDelta {
			dp.SetIntValue(int64(r.Count))
			return
		}
		dp.SetIntValue(int64(t.count[id]))
	})
}

func (f *Flusher) buildHistograms(m pmetric.Metric, fi int, ids []uint32, buf *series.DeltaBuffer, ts pcommon.Timestamp) {
	m.SetName(f.DurationName)
	m.SetUnit(f.Unit)
	t, d := f.tables[fi], &buf.Fams[fi]
	if f.NB == 0 {
		h := m.SetEmptyExponentialHistogram()
		h.SetAggregationTemporality(f.Temporality())
		appendPoints(f, h.DataPoints(), fi, ids, buf, ts, func(dp pmetric.ExponentialHistogramDataPoint, id uint32, r *series.DeltaRow, row int) {
			if f.IsDelta {
				setExpo(dp, r.Count, r.Sum, d.Expo.At(row), &d.Slab)
			} else {
				setExpo(dp, t.count[id], t.sum[id], &t.expo[id], &t.slab)
			}
		})
		return
	}
	h := m.SetEmptyHistogram()
	h.SetAggregationTemporality(f.Temporality())
	appendPoints(f, h.DataPoints(), fi, ids, buf, ts, func(dp pmetric.HistogramDataPoint, id uint32, r *series.DeltaRow, row int) {
		dp.ExplicitBounds().FromRaw(f.Bounds)
		if f.IsDelta {
			f.scratch = d.BucketCounts(row, f.NB, f.scratch)
			dp.BucketCounts().FromRaw(f.scratch)
			dp.SetCount(r.Count)
			dp.SetSum(r.Sum)
		} else {
			dp.BucketCounts().FromRaw(t.buckets[int(id)*f.NB : int(id+1)*f.NB])
			dp.SetCount(t.count[id])
			dp.SetSum(t.sum[id])
		}
	})
}

// setExpo fills an exponential data point as spanmetrics' go-expohisto conversion does.
func setExpo(dp pmetric.ExponentialHistogramDataPoint, count uint64, sum float64, e *series.ExpoState, s *series.Slab) {
	k := &e.Sketch
	dp.SetCount(count)
	dp.SetSum(sum)
	if count != 0 {
		dp.SetMin(e.Min)
		dp.SetMax(e.Max)
	}
	dp.SetZeroCount(e.Zero)
	if count != e.Zero {
		dp.SetScale(k.Scale())
	}
	if offset, counts := k.Positive(s); len(counts) > 0 {
		dp.Positive().SetOffset(offset)
		dp.Positive().BucketCounts().FromRaw(counts)
	}
}

func (f *Flusher) putExemplars(dst pmetric.ExemplarSlice, d *series.DeltaFamily, r *series.DeltaRow, ts pcommon.Timestamp) {
	if r == nil || r.ExN == 0 {
		return
	}
	dst.EnsureCapacity(int(r.ExN))
	for _, e := range d.Exemplars[r.ExOff : r.ExOff+r.ExN] {
		x := dst.AppendEmpty()
		x.SetTimestamp(ts)
		x.SetTraceID(e.TraceID)
		x.SetSpanID(e.SpanID)
		x.SetDoubleValue(e.Value)
	}
}
