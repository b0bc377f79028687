package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"bytes"
	"encoding/hex"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// This file renders the protobuf exposition: one length-delimited
// io.prometheus.client.MetricFamily per family, as expfmt's FmtProtoDelim
// encoder writes them, from the same store and in the same family order as
// the text body. Exponential histograms become native histograms
// (nativehist.go); everything else is what client_golang would write for
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

// renderProto appends the protobuf exposition of the store to dst.
func (rd *renderer) renderProto(dst []byte, s *seriesStore) []byte {
	f := &rd.frame
	pr := &rd.proto
	if pr.names == nil {
		pr.names = map[string]*string{}
		pr.dp = pmetric.NewExponentialHistogramDataPoint()
	}
	pr.refused = 0
	var targets []string
	// The series and hidden counts stay the text render's.
	rd.fams, targets, _ = s.listFamilies(rd.fams[:0], rd.targets[:0])
	rd.targets = targets
	if len(targets) > 0 {
		pr.begin(s.names.targetInfoName(), "Target metadata", typeGauge)
		for _, l := range targets {
			pr.lblText = l
			m := pr.metric([]byte(l), 0)
			m.Gauge = &dto.Gauge{Value: proto.Float64(1)}
		}
		dst = rd.appendFamily(dst)
	}
	for _, fam := range rd.fams {
		if fam.hidden {
			continue
		}
		pr.begin(fam.name, fam.help, fam.typ)
		for pos := 0; ; {
			pos = s.copyRows(f, fam.id, pos, rd.withTimestamps, true)
			if len(f.rows) == 0 {
				break
			}
			pr.lblText = string(f.labels)
			for ri := range f.rows {
				r := &f.rows[ri]
				if !r.valid {
					continue
				}
				labels := f.labels[r.lblOff : r.lblOff+r.lblLen]
				var m *dto.Metric
				switch r.kind {
				case kindNumber:
					m = pr.metric(labels, r.lblOff)
					switch fam.typ {
					case typeCounter:
						m.Counter = pr.cSlab.one()
						m.Counter.Value = pr.float(r.value)
						if r.nExs > 0 {
							m.Counter.Exemplar = pr.exemplar(&f.exs[r.exs+r.nExs-1])
						}
						m.Counter.CreatedTimestamp = pr.created(r.start)
					case typeUntyped:
						m.Untyped = &dto.Untyped{Value: proto.Float64(r.value)}
					default:
						m.Gauge = pr.gSlab.one()
						m.Gauge.Value = pr.float(r.value)
					}
				case kindHistogram:
					m = pr.metric(labels, r.lblOff)
					m.Histogram = pr.classic(f, r)
					m.Histogram.CreatedTimestamp = pr.created(r.start)
				case kindExpHistogram:
					h, err := pr.native(f, r)
					if err != nil {
						pr.refused++
						continue
					}
					m = pr.metric(labels, r.lblOff)
					m.Histogram = h
				case kindSummary:
					m = pr.metric(labels, r.lblOff)
					sm := &dto.Summary{SampleCount: proto.Uint64(r.count), SampleSum: proto.Float64(r.value), CreatedTimestamp: pr.created(r.start)}
					for q := int32(0); q < r.nCounts; q++ {
						sm.Quantile = append(sm.Quantile, &dto.Quantile{
							Quantile: proto.Float64(math.Float64frombits(f.counts[r.counts+2*q])),
							Value:    proto.Float64(math.Float64frombits(f.counts[r.counts+2*q+1])),
						})
					}
					m.Summary = sm
				}
				if rd.withTimestamps {
					m.TimestampMs = proto.Int64(r.ts)
				}
			}
			pr.flushFrame()
		}
		dst = rd.appendFamily(dst)
	}
	if cap(pr.fam) > maxKeptFamily {
		pr.fam = nil
	}
	return dst
}

// appendFamily appends the family built in rd.proto to dst, handing dst to
// the sink as it fills: a family can be far larger than a chunk, and the
// chunk buffer (shared with the text bodies) would otherwise grow to the
// largest family and stay so.
func (rd *renderer) appendFamily(dst []byte) []byte {
	fam := rd.proto.end()
	if fam == nil {
		return dst
	}
	dst = protowire.AppendVarint(dst, uint64(len(fam)))
	for len(fam) > 0 {
		n := min(len(fam), streamChunk)
		dst = append(dst, fam[:n]...)
		fam = fam[n:]
		dst = rd.flushChunk(dst, false)
	}
	return dst
}

// release lets the protobuf render's buffers go, when no protobuf client
// is around any more.
func (pr *protoRenderer) release() {
	*pr = protoRenderer{}
}

// begin starts a family.
func (pr *protoRenderer) begin(name, help string, typ familyType) {
	t := dto.MetricType_GAUGE
	switch typ {
	case typeCounter:
		t = dto.MetricType_COUNTER
	case typeUntyped:
		t = dto.MetricType_UNTYPED
	case typeHistogram:
		t = dto.MetricType_HISTOGRAM
	case typeSummary:
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

// labelPairs parses rendered labels (`a="x",b="y"`, escaped as appendLabels
// writes them) into label pairs. text is b as a string: values without
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
// string with appendEscaped's escapes (\\, \", \n), and returns it with the
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
func (pr *protoRenderer) exemplar(e *exemplar) *dto.Exemplar { return protoExemplar(e) }

// protoExemplar is exemplar, for a renderer and for nativeExemplars.
func protoExemplar(e *exemplar) *dto.Exemplar {
	x := &dto.Exemplar{Value: proto.Float64(e.value), Timestamp: timestamppb.New(e.ts.AsTime())}
	if !e.spanID.IsEmpty() {
		x.Label = append(x.Label, &dto.LabelPair{Name: proto.String("span_id"), Value: proto.String(hex.EncodeToString(e.spanID[:]))})
	}
	if !e.traceID.IsEmpty() {
		x.Label = append(x.Label, &dto.LabelPair{Name: proto.String("trace_id"), Value: proto.String(hex.EncodeToString(e.traceID[:]))})
	}
	return x
}

// classic is an explicit histogram as client_golang's const histogram writes
// it: buckets in bound order without a +Inf bucket unless a bound is +Inf;
// each exemplar on the first bucket whose bound is at least its value (the
// last one wins), or on an added +Inf bucket.
func (pr *protoRenderer) classic(f *frame, r *row) *dto.Histogram {
	bs := r.bounds
	h := pr.hSlab.one()
	h.SampleCount, h.SampleSum = pr.uint(r.count), pr.float(r.value)
	counts := f.counts[r.counts : r.counts+r.nCounts]
	h.Bucket = pr.bPtrs.take(len(bs.order))
	for k, idx := range bs.order {
		bk := pr.bSlab.one()
		bk.CumulativeCount, bk.UpperBound = pr.uint(counts[k]), pr.float(bs.bounds[idx])
		h.Bucket[k] = bk
	}
	for e := r.exs; e < r.exs+r.nExs; e++ {
		x := &f.exs[e]
		k, _ := slices.BinarySearchFunc(h.Bucket, x.value, func(b *dto.Bucket, v float64) int {
			if b.GetUpperBound() < v {
				return -1
			}
			return 1
		})
		if k == len(h.Bucket) {
			h.Bucket = append(h.Bucket, &dto.Bucket{CumulativeCount: proto.Uint64(r.count), UpperBound: proto.Float64(math.Inf(1))})
		}
		h.Bucket[k].Exemplar = pr.exemplar(x)
	}
	return h
}

// native maps an exponential histogram row through nativeHistogram.
func (pr *protoRenderer) native(f *frame, r *row) (*dto.Histogram, error) {
	n := &f.nat[r.nat]
	dp := pr.dp
	dp.SetScale(n.scale)
	dp.SetZeroThreshold(n.zeroThresh)
	dp.SetZeroCount(n.zeroCount)
	dp.SetCount(r.count)
	if n.hasSum {
		dp.SetSum(r.value)
	} else {
		dp.RemoveSum()
	}
	dp.SetStartTimestamp(pcommon.Timestamp(n.start))
	counts := f.counts[r.counts : r.counts+n.nPos+n.nNeg]
	dp.Positive().SetOffset(n.posOffset)
	dp.Positive().BucketCounts().FromRaw(counts[:n.nPos])
	dp.Negative().SetOffset(n.negOffset)
	dp.Negative().BucketCounts().FromRaw(counts[n.nPos:])
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
	for e := r.exs; e < r.exs+r.nExs; e++ {
		h.Exemplars = append(h.Exemplars, pr.exemplar(&f.exs[e]))
	}
	return h, nil
}
