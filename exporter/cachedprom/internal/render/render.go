// Package render turns the series store into exposition bodies (text 0.0.4,
// OpenMetrics 1.0 and the protobuf exposition, with native histograms and
// the classic fallback), compresses them, in segments on several cores when
// large, and keeps the published snapshots whose bytes scrapes write.
package render // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"

import (
	"slices"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"
)

// Options configure what the bodies show.
type Options struct {
	// WithTimestamps writes each sample's timestamp (send_timestamps).
	WithTimestamps bool
	// ClassicFallback renders exponential histograms in the text formats as
	// classic histograms (native_histograms.classic_fallback, classic.go);
	// off, they show `_count`, `_sum` and the `+Inf` bucket only.
	ClassicFallback bool
}

// Renderer formats the store, family by family and a frame of rows at a
// time, each frame after the store lock is released. It owns reusable
// buffers; one render at a time.
type Renderer struct {
	lines
	classicFallback bool
	classic         classic
	frame           store.Frame
	fams            []store.Family
	targets         []string
	les             []leLabels // by bound set id
	series          int        // series shown by the last text or OpenMetrics render
	hidden          int        // series hidden by name collisions in that render

	out   output        // where the body goes as it is formatted (stream.go)
	proto protoRenderer // the protobuf render's state (proto.go)
}

// New returns a renderer.
func New(opts Options) *Renderer {
	rd := &Renderer{}
	rd.setOptions(opts)
	return rd
}

func (rd *Renderer) setOptions(opts Options) {
	rd.withTimestamps = opts.WithTimestamps
	rd.classicFallback = opts.ClassicFallback
}

// Series is the number of series the last text or OpenMetrics render
// showed.
func (rd *Renderer) Series() int { return rd.series }

// Hidden is the number of series the last text or OpenMetrics render left
// out because their sample names collide with another family's.
func (rd *Renderer) Hidden() int { return rd.hidden }

// NativeRefused is the number of native histograms the last protobuf render
// left out: merged deltas beyond the protobuf's ranges (indexes past int32,
// counts past int64). The points the protobuf body cannot show (scale,
// population, no sum) are hidden from the text too, and counted at ingest.
func (rd *Renderer) NativeRefused() int { return rd.proto.refused }

// Text appends the text 0.0.4 exposition of the store to dst.
func (rd *Renderer) Text(dst []byte, s *store.Store) []byte {
	return rd.render(dst, s, false)
}

// OpenMetrics appends the OpenMetrics 1.0 exposition of the store to dst.
func (rd *Renderer) OpenMetrics(dst []byte, s *store.Store) []byte {
	dst = rd.render(dst, s, true)
	return append(dst, "# EOF\n"...)
}

// render reads the store family by family, a frame of rows at a time, and
// formats each frame after the store lock is released.
func (rd *Renderer) render(dst []byte, s *store.Store, om bool) []byte {
	f := &rd.frame
	var targets []string
	rd.fams, targets, rd.hidden = s.Families(rd.fams[:0], rd.targets[:0])
	rd.targets = targets
	rd.series = 0
	if len(targets) > 0 {
		name := s.TargetInfoName()
		dst = appendHeader(dst, name, "Target metadata", store.TypeGauge, om)
		for _, l := range targets {
			dst = appendSampleStart(dst, name, "", []byte(l), "")
			if om {
				dst = append(dst, " 1.0\n"...)
			} else {
				dst = append(dst, " 1\n"...)
			}
		}
	}
	for _, fam := range rd.fams {
		if fam.Hidden {
			continue
		}
		headerDone := false
		name := fam.Name
		for pos := 0; ; {
			pos = s.CopyRows(f, fam.ID, pos, rd.withTimestamps, rd.classicFallback)
			if len(f.Rows) == 0 {
				break
			}
			for ri := range f.Rows {
				dst = rd.out.flush(dst, false)
				r := &f.Rows[ri]
				if !r.Valid {
					continue
				}
				rd.series++
				if !headerDone {
					dst = appendHeader(dst, name, fam.Help, fam.Type, om)
					headerDone = true
				}
				labels := f.Labels(r)
				switch r.Kind {
				case store.KindNumber:
					dst = appendSampleStart(dst, name, "", labels, "")
					dst = rd.appendValue(dst, r.Value, om)
					dst = rd.appendTimestamp(dst, r.TS, om)
					if om && fam.Type == store.TypeCounter {
						if exs := f.Exemplars(r); len(exs) > 0 {
							dst = appendExemplar(dst, &exs[len(exs)-1])
						}
					}
					dst = append(dst, '\n')
				case store.KindHistogram:
					dst = rd.appendHistogram(dst, f, name, labels, r, om)
				case store.KindExpHistogram:
					if rd.classicFallback {
						dst = rd.classic.append(dst, &rd.lines, f, name, labels, r, om)
						break
					}
					le := `le="+Inf"}`
					dst = appendSampleStart(dst, name, "_bucket", labels, le)
					dst = rd.appendCount(dst, r.Count, om)
					dst = rd.appendTimestamp(dst, r.TS, om)
					dst = append(dst, '\n')
					dst = rd.appendSumCount(dst, name, labels, r, om)
				case store.KindSummary:
					for q := range r.Quantiles() {
						qv, v := f.Quantile(r, q)
						dst = appendSampleStart(dst, name, "", labels, rd.floatLabel(`quantile="`, qv, om))
						dst = rd.appendValue(dst, v, om)
						dst = rd.appendTimestamp(dst, r.TS, om)
						dst = append(dst, '\n')
					}
					dst = rd.appendSumCount(dst, name, labels, r, om)
				}
			}
		}
	}
	return dst
}

func (rd *Renderer) appendHistogram(dst []byte, f *store.Frame, name string, labels []byte, r *store.Row, om bool) []byte {
	bs := r.Bounds
	l := rd.leLabels(bs)
	les := l.text
	if om {
		les = l.om
	}
	// Exemplars go to the first bucket whose bound is >= their value, the
	// last one winning, or to an explicit +Inf bucket (client_golang).
	var exAt []int32
	var exInf int32 = -1
	exs := f.Exemplars(r)
	if om && len(exs) > 0 {
		exAt = make([]int32, len(les))
		for k := range exAt {
			exAt[k] = -1
		}
		for e := range exs {
			v := exs[e].Value
			k, _ := slices.BinarySearchFunc(bs.Order, v, func(idx int, v float64) int {
				b := bs.Bounds[idx]
				if b < v {
					return -1
				}
				return 1
			})
			if k < len(les) {
				exAt[k] = int32(e)
			} else {
				exInf = int32(e)
			}
		}
	}
	counts := f.Buckets(r)
	for k, le := range les {
		dst = appendSampleStart(dst, name, "_bucket", labels, le)
		dst = rd.appendCount(dst, counts[k], om)
		dst = rd.appendTimestamp(dst, r.TS, om)
		if exAt != nil && exAt[k] >= 0 {
			dst = appendExemplar(dst, &exs[exAt[k]])
		}
		dst = append(dst, '\n')
	}
	if !bs.HasInf {
		dst = appendSampleStart(dst, name, "_bucket", labels, `le="+Inf"}`)
		dst = rd.appendCount(dst, r.Count, om)
		dst = rd.appendTimestamp(dst, r.TS, om)
		if exInf >= 0 {
			dst = appendExemplar(dst, &exs[exInf])
		}
		dst = append(dst, '\n')
	}
	return rd.appendSumCount(dst, name, labels, r, om)
}

// leLabels returns the `le` labels of bound set bs, made on its first
// render: sets are never freed and never change, so they are kept by id.
func (rd *Renderer) leLabels(bs *store.BoundSet) *leLabels {
	id := int(bs.ID())
	if id >= len(rd.les) {
		rd.les = append(rd.les, make([]leLabels, id+1-len(rd.les))...)
	}
	if l := &rd.les[id]; !l.done {
		*l = newLELabels(bs)
	}
	return &rd.les[id]
}

// Proto appends the protobuf exposition of the store to dst: one
// length-delimited MetricFamily per family, in the text body's order
// (proto.go says how a family is built a frame at a time).
func (rd *Renderer) Proto(dst []byte, s *store.Store) []byte {
	f := &rd.frame
	pr := &rd.proto
	if pr.names == nil {
		pr.names = map[string]*string{}
		pr.dp = pmetric.NewExponentialHistogramDataPoint()
	}
	pr.refused = 0
	var targets []string
	// The series and hidden counts stay the text render's.
	rd.fams, targets, _ = s.Families(rd.fams[:0], rd.targets[:0])
	rd.targets = targets
	if len(targets) > 0 {
		pr.begin(s.TargetInfoName(), "Target metadata", store.TypeGauge)
		for _, l := range targets {
			pr.lblText = l
			m := pr.metric([]byte(l), 0)
			m.Gauge = &dto.Gauge{Value: proto.Float64(1)}
		}
		dst = rd.appendFamily(dst)
	}
	for _, fam := range rd.fams {
		if fam.Hidden {
			continue
		}
		pr.begin(fam.Name, fam.Help, fam.Type)
		for pos := 0; ; {
			pos = s.CopyRows(f, fam.ID, pos, rd.withTimestamps, true)
			if len(f.Rows) == 0 {
				break
			}
			pr.lblText = string(f.LabelBytes())
			for ri := range f.Rows {
				if r := &f.Rows[ri]; r.Valid {
					pr.add(f, r, fam.Type, rd.withTimestamps)
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

// appendFamily appends the family built in rd.proto to dst, handing dst on
// as it fills: a family can be far larger than a chunk, and the chunk
// buffer (shared with the text bodies) would otherwise grow to the largest
// family and stay so.
func (rd *Renderer) appendFamily(dst []byte) []byte {
	fam := rd.proto.end()
	if fam == nil {
		return dst
	}
	dst = protowire.AppendVarint(dst, uint64(len(fam)))
	for len(fam) > 0 {
		n := min(len(fam), streamChunk)
		dst = append(dst, fam[:n]...)
		fam = fam[n:]
		dst = rd.out.flush(dst, false)
	}
	return dst
}
