package render // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"

import (
	"bytes"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"
)

// This file renders the protobuf exposition: one length-delimited
// io.prometheus.client.MetricFamily per family, as expfmt's FmtProtoDelim
// encoder writes them, from the same store and in the same family order as
// the text body. Exponential histograms become native histograms
// (native.go); everything else is what client_golang would write for
// the stock exporter's const metrics.
//
// A family of 50k series as dto messages would be tens of MB of small heap
// objects at once. Instead each frame's metrics are marshalled as a
// MetricFamily holding only them, appended to the family's name, help and
// type marshalled as a MetricFamily of their own: concatenated protobuf
// messages of one type decode as one message whose repeated fields are
// concatenated (the protobuf encoding's merge rule), and since Go's
// marshaller writes fields in number order (name 1, help 2, type 3, metric
// 4), the bytes are exactly those of the whole family marshalled at once
// (TestProtoBodyIsExpfmtEncoding). Only the delimiter, the varint length
// of the message that protodelim writes, is added here, with protowire.

// protoRenderer holds the protobuf render's reusable state.
type protoRenderer struct {
	opts    proto.MarshalOptions
	fam     []byte // the family being built, without its delimiter
	header  []byte // its name, help and type
	metrics []*dto.Metric
	n       int                // metrics in fam
	names   map[string]*string // interned label names
	dp      pmetric.ExponentialHistogramDataPoint
	// refused counts the native histograms nativeHistogram refused in the
	// last render, left out of the protobuf body. The points it refuses
	// (scale, population, no sum) are hidden from the text too and counted at
	// ingest; only merged deltas beyond the protobuf's ranges (indexes past
	// int32, counts past int64) get here, and the text still shows them.
	refused int

	// The messages of the common kinds (counters, gauges, explicit
	// histograms) come from slabs reused frame after frame: a frame's
	// messages are marshalled before the next frame takes them, so a
	// render allocates per frame, not per series. lblText holds the
	// frame's labels as one string, which label values are cut from.
	lblText  string
	mSlab    slab[dto.Metric]
	lpSlab   slab[dto.LabelPair]
	lpPtrs   slab[*dto.LabelPair]
	strSlab  slab[string]
	cSlab    slab[dto.Counter]
	gSlab    slab[dto.Gauge]
	hSlab    slab[dto.Histogram]
	bSlab    slab[dto.Bucket]
	bPtrs    slab[*dto.Bucket]
	tsSlab   slab[timestamppb.Timestamp]
	fSlab    slab[float64]
	uSlab    slab[uint64]
	tmpPairs []*dto.LabelPair
}

// slab hands out zeroed values from a reused array; reset makes them all
// available again. A full array is replaced, not grown: the values handed
// out so far stay where they are until reset.
type slab[T any] struct{ items []T }

func (s *slab[T]) take(n int) []T {
	if len(s.items)+n > cap(s.items) {
		s.items = make([]T, 0, max(2*cap(s.items), n, 256))
	}
	out := s.items[len(s.items) : len(s.items)+n : len(s.items)+n]
	s.items = s.items[:len(s.items)+n]
	clear(out)
	return out
}

func (s *slab[T]) one() *T { return &s.take(1)[0] }

func (s *slab[T]) reset() { s.items = s.items[:0] }

func (pr *protoRenderer) float(v float64) *float64 {
	p := pr.fSlab.one()
	*p = v
	return p
}

// created is the created timestamp for a series started at start (unix
// nanoseconds), nil when the start is not after the Unix epoch, as the
// stock exporter leaves it out then (and for native histograms,
// nativeHistogram).
func (pr *protoRenderer) created(start int64) *timestamppb.Timestamp {
	if start < 1e9 {
		return nil
	}
	ts := pr.tsSlab.one()
	ts.Seconds, ts.Nanos = start/1e9, int32(start%1e9)
	return ts
}

func (pr *protoRenderer) uint(v uint64) *uint64 {
	p := pr.uSlab.one()
	*p = v
	return p
}

// add adds the message of row r of a family of type typ to the frame; it
// reports false, adding nothing, for a native histogram nativeHistogram
// refuses.
func (pr *protoRenderer) add(f *store.Frame, r *store.Row, typ store.FamilyType, withTimestamps bool) bool {
	labels := f.Labels(r)
	var m *dto.Metric
	switch r.Kind {
	case store.KindNumber:
		m = pr.metric(labels, r.LabelOffset())
		switch typ {
		case store.TypeCounter:
			m.Counter = pr.cSlab.one()
			m.Counter.Value = pr.float(r.Value)
			if exs := f.Exemplars(r); len(exs) > 0 {
				m.Counter.Exemplar = pr.exemplar(&exs[len(exs)-1])
			}
			m.Counter.CreatedTimestamp = pr.created(r.Start)
		case store.TypeUntyped:
			m.Untyped = &dto.Untyped{Value: proto.Float64(r.Value)}
		default:
			m.Gauge = pr.gSlab.one()
			m.Gauge.Value = pr.float(r.Value)
		}
	case store.KindHistogram:
		m = pr.metric(labels, r.LabelOffset())
		m.Histogram = pr.classic(f, r)
		m.Histogram.CreatedTimestamp = pr.created(r.Start)
	case store.KindExpHistogram:
		h, err := pr.native(f, r)
		if err != nil {
			pr.refused++
			return false
		}
		m = pr.metric(labels, r.LabelOffset())
		m.Histogram = h
	case store.KindSummary:
		m = pr.metric(labels, r.LabelOffset())
		sm := &dto.Summary{SampleCount: proto.Uint64(r.Count), SampleSum: proto.Float64(r.Value), CreatedTimestamp: pr.created(r.Start)}
		for q := range r.Quantiles() {
			qv, v := f.Quantile(r, q)
			sm.Quantile = append(sm.Quantile, &dto.Quantile{Quantile: proto.Float64(qv), Value: proto.Float64(v)})
		}
		m.Summary = sm
	}
	if withTimestamps {
		m.TimestampMs = proto.Int64(r.TS)
	}
	return true
}

// release lets the protobuf render's buffers go, when no protobuf client
// is around any more.
func (pr *protoRenderer) release() {
	*pr = protoRenderer{}
}

// begin starts a family.
func (pr *protoRenderer) begin(name, help string, typ store.FamilyType) {
	t := dto.MetricType_GAUGE
	switch typ {
	case store.TypeCounter:
		t = dto.MetricType_COUNTER
	case store.TypeUntyped:
		t = dto.MetricType_UNTYPED
	case store.TypeHistogram:
		t = dto.MetricType_HISTOGRAM
	case store.TypeSummary:
		t = dto.MetricType_SUMMARY
	}
	pr.header, _ = pr.opts.MarshalAppend(pr.header[:0], &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: t.Enum()})
	pr.fam = append(pr.fam[:0], pr.header...)
	pr.n = 0
	pr.metrics = pr.metrics[:0]
}

// metric adds a metric with the given rendered labels, at offset off of
// pr.lblText, to the frame.
func (pr *protoRenderer) metric(labels []byte, off int) *dto.Metric {
	m := pr.mSlab.one()
	pr.tmpPairs = pr.labelPairs(pr.tmpPairs[:0], labels, pr.lblText[off:off+len(labels)], true)
	m.Label = pr.lpPtrs.take(len(pr.tmpPairs))
	copy(m.Label, pr.tmpPairs)
	pr.metrics = append(pr.metrics, m)
	return m
}

// flushFrame marshals the frame's metrics onto the family.
func (pr *protoRenderer) flushFrame() {
	if len(pr.metrics) == 0 {
		return
	}
	pr.fam, _ = pr.opts.MarshalAppend(pr.fam, &dto.MetricFamily{Metric: pr.metrics})
	pr.n += len(pr.metrics)
	clear(pr.metrics)
	pr.metrics = pr.metrics[:0]
	pr.mSlab.reset()
	pr.lpSlab.reset()
	pr.lpPtrs.reset()
	pr.strSlab.reset()
	pr.cSlab.reset()
	pr.gSlab.reset()
	pr.hSlab.reset()
	pr.bSlab.reset()
	pr.bPtrs.reset()
	pr.tsSlab.reset()
	pr.fSlab.reset()
	pr.uSlab.reset()
}

// end returns the family's message, or nil when it has no metric (as the
// text body writes no header for it).
func (pr *protoRenderer) end() []byte {
	pr.flushFrame()
	if pr.n == 0 {
		return nil
	}
	return pr.fam
}

// maxKeptFamily is the largest family buffer kept between renders. A
// family is built whole in one buffer (its delimiter is its length): about
// 200 bytes per series, 20 MB for the 100k-series families of 200k OTLP
// series. A larger one is let go after each render rather than held.
const maxKeptFamily = 64 << 20

// labelPairs parses rendered labels (`a="x",b="y"`, escaped as
// naming.AppendLabel writes them) into label pairs. text is b as a string: values without
// escapes are cut from it instead of allocated. pooled takes the pairs from
// the frame's slabs.
func (pr *protoRenderer) labelPairs(dst []*dto.LabelPair, b []byte, text string, pooled bool) []*dto.LabelPair {
	pos := 0
	for pos < len(b) {
		var name, value string
		name, pos = parseLabelToken(b, text, pos, '=')
		pos++ // '='
		value, pos = parseLabelToken(b, text, pos, ',')
		pos++ // ','
		np, ok := pr.names[name]
		if !ok {
			name = strings.Clone(name) // not kept cut from a frame's text
			np = &name
			pr.names[name] = np
		}
		var lp *dto.LabelPair
		var vp *string
		if pooled {
			lp, vp = pr.lpSlab.one(), pr.strSlab.one()
		} else {
			lp, vp = &dto.LabelPair{}, new(string)
		}
		*vp = value
		lp.Name, lp.Value = np, vp
		dst = append(dst, lp)
	}
	return dst
}

// parseLabelToken reads, from b[pos:], a bare name up to end, or a quoted
// string with naming.AppendEscaped's escapes (\\, \", \n), and returns it with the
// position after it. text is b as a string.
func parseLabelToken(b []byte, text string, pos int, end byte) (string, int) {
	if b[pos] != '"' {
		i := bytes.IndexByte(b[pos:], end)
		if i < 0 {
			return text[pos:], len(b)
		}
		return text[pos : pos+i], pos + i
	}
	// Quoted: find the closing quote, unescaping only when needed.
	plain := true
	i := pos + 1
	for ; i < len(b) && b[i] != '"'; i++ {
		if b[i] == '\\' {
			plain = false
			i++
		}
	}
	if plain {
		return text[pos+1 : i], i + 1
	}
	out := make([]byte, 0, i-pos)
	for j := pos + 1; j < i; j++ {
		c := b[j]
		if c == '\\' {
			j++
			c = b[j]
			if c == 'n' {
				c = '\n'
			}
		}
		out = append(out, c)
	}
	return string(out), i + 1
}

// exemplar converts a stored exemplar as client_golang's
// NewMetricWithExemplars does: value, labels, timestamp.
func (pr *protoRenderer) exemplar(e *store.Exemplar) *dto.Exemplar { return protoExemplar(e) }

// classic is an explicit histogram as client_golang's const histogram writes
// it: buckets in bound order without a +Inf bucket unless a bound is +Inf;
// each exemplar on the first bucket whose bound is at least its value (the
// last one wins), or on an added +Inf bucket.
func (pr *protoRenderer) classic(f *store.Frame, r *store.Row) *dto.Histogram {
	bs := r.Bounds
	h := pr.hSlab.one()
	h.SampleCount, h.SampleSum = pr.uint(r.Count), pr.float(r.Value)
	counts := f.Buckets(r)
	h.Bucket = pr.bPtrs.take(len(bs.Order))
	for k, idx := range bs.Order {
		bk := pr.bSlab.one()
		bk.CumulativeCount, bk.UpperBound = pr.uint(counts[k]), pr.float(bs.Bounds[idx])
		h.Bucket[k] = bk
	}
	exs := f.Exemplars(r)
	for e := range exs {
		x := &exs[e]
		k, _ := slices.BinarySearchFunc(h.Bucket, x.Value, func(b *dto.Bucket, v float64) int {
			if b.GetUpperBound() < v {
				return -1
			}
			return 1
		})
		if k == len(h.Bucket) {
			h.Bucket = append(h.Bucket, &dto.Bucket{CumulativeCount: proto.Uint64(r.Count), UpperBound: proto.Float64(math.Inf(1))})
		}
		h.Bucket[k].Exemplar = pr.exemplar(x)
	}
	return h
}

// native maps an exponential histogram row through nativeHistogram.
func (pr *protoRenderer) native(f *store.Frame, r *store.Row) (*dto.Histogram, error) {
	n, pos, neg := f.Native(r)
	dp := pr.dp
	dp.SetScale(n.Scale)
	dp.SetZeroThreshold(n.ZeroThresh)
	dp.SetZeroCount(n.ZeroCount)
	dp.SetCount(r.Count)
	if n.HasSum {
		dp.SetSum(r.Value)
	} else {
		dp.RemoveSum()
	}
	dp.SetStartTimestamp(pcommon.Timestamp(n.Start))
	dp.Positive().SetOffset(n.PosOffset)
	dp.Positive().BucketCounts().FromRaw(pos)
	dp.Negative().SetOffset(n.NegOffset)
	dp.Negative().BucketCounts().FromRaw(neg)
	h, err := nativeHistogram(dp)
	// The point only borrowed the frame's counts.
	dp.Positive().BucketCounts().FromRaw(nil)
	dp.Negative().BucketCounts().FromRaw(nil)
	if err != nil {
		return nil, err
	}
	// The store keeps exemplars as they are rendered (timestamps already
	// defaulted to their point's), so they are converted from there, not
	// through the point.
	exs := f.Exemplars(r)
	for e := range exs {
		h.Exemplars = append(h.Exemplars, pr.exemplar(&exs[e]))
	}
	return h, nil
}
