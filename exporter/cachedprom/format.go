package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"bytes"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// renderer formats the store. It owns reusable buffers.
type renderer struct {
	withTimestamps bool
	// classicFallback renders exponential histograms in the text formats
	// as classic buckets (native_histograms.classic_fallback,
	// classicfallback.go); posBuf and negBuf are its scratch.
	classicFallback bool
	posBuf, negBuf  []expBucketCount
	num             []byte
	frame           frame
	fams            []familyRef
	targets         []string
	series          int // series rendered by the last render
	hidden          int // series hidden by name collisions in the last render

	// sink, when set, receives the body in chunks of about streamChunk
	// bytes instead of it being accumulated: the gzip-only form is built
	// without ever holding the uncompressed body.
	sink    io.Writer
	written int
	// segments, when set instead of sink, takes the body in segments of
	// about segmentSize bytes, compressed on other goroutines (segments.go).
	segments *segmentCompressor
	// proto is the protobuf render's state (proto.go).
	proto protoRenderer
}

// streamChunk is the size of the pieces handed to the sink; big enough to
// amortise the call, small enough to stay in cache.
const streamChunk = 256 << 10

// flushChunk hands dst to the sink once it is large enough.
func (rd *renderer) flushChunk(dst []byte, force bool) []byte {
	if rd.segments != nil {
		if force || len(dst) < segmentSize {
			return dst // the last segment is handed over by finish
		}
		rd.written += len(dst)
		return rd.segments.submit(dst)
	}
	if rd.sink == nil || (!force && len(dst) < streamChunk) {
		return dst
	}
	_, _ = rd.sink.Write(dst) // the sink is a gzip writer over a bytes.Buffer
	rd.written += len(dst)
	return dst[:0]
}

// renderText appends the text 0.0.4 exposition of the store to dst.
func (rd *renderer) renderText(dst []byte, s *seriesStore) []byte {
	return rd.render(dst, s, false)
}

// renderOpenMetrics appends the OpenMetrics 1.0 exposition of the store to dst.
func (rd *renderer) renderOpenMetrics(dst []byte, s *seriesStore) []byte {
	dst = rd.render(dst, s, true)
	return append(dst, "# EOF\n"...)
}

// render reads the store family by family, a frame of rows at a time, and
// formats each frame after the store lock is released.
func (rd *renderer) render(dst []byte, s *seriesStore, om bool) []byte {
	f := &rd.frame
	var targets []string
	rd.fams, targets, rd.hidden = s.listFamilies(rd.fams[:0], rd.targets[:0])
	rd.targets = targets
	rd.series = 0
	if len(targets) > 0 {
		name := s.names.targetInfoName()
		dst = appendHeader(dst, name, "Target metadata", typeGauge, om)
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
		if fam.hidden {
			continue
		}
		headerDone := false
		name := fam.name
		for pos := 0; ; {
			pos = s.copyRows(f, fam.id, pos, rd.withTimestamps, rd.classicFallback)
			if len(f.rows) == 0 {
				break
			}
			for ri := range f.rows {
				dst = rd.flushChunk(dst, false)
				r := &f.rows[ri]
				if !r.valid {
					continue
				}
				rd.series++
				if !headerDone {
					dst = appendHeader(dst, name, fam.help, fam.typ, om)
					headerDone = true
				}
				labels := f.labels[r.lblOff : r.lblOff+r.lblLen]
				switch r.kind {
				case kindNumber:
					dst = appendSampleStart(dst, name, "", labels, "")
					dst = rd.appendValue(dst, r.value, om)
					dst = rd.appendTimestamp(dst, r.ts, om)
					if om && fam.typ == typeCounter && r.nExs > 0 {
						dst = rd.appendExemplar(dst, &f.exs[r.exs+r.nExs-1])
					}
					dst = append(dst, '\n')
				case kindHistogram:
					dst = rd.appendHistogram(dst, f, name, labels, r, om)
				case kindExpHistogram:
					if rd.classicFallback {
						dst = rd.appendExpAsClassic(dst, f, name, labels, r, om)
						break
					}
					le := `le="+Inf"}`
					dst = appendSampleStart(dst, name, "_bucket", labels, le)
					dst = rd.appendCount(dst, r.count, om)
					dst = rd.appendTimestamp(dst, r.ts, om)
					dst = append(dst, '\n')
					dst = rd.appendSumCount(dst, name, labels, r, om)
				case kindSummary:
					for q := int32(0); q < r.nCounts; q++ {
						qv := math.Float64frombits(f.counts[r.counts+2*q])
						v := math.Float64frombits(f.counts[r.counts+2*q+1])
						dst = appendSampleStart(dst, name, "", labels, rd.floatLabel(`quantile="`, qv, om))
						dst = rd.appendValue(dst, v, om)
						dst = rd.appendTimestamp(dst, r.ts, om)
						dst = append(dst, '\n')
					}
					dst = rd.appendSumCount(dst, name, labels, r, om)
				}
			}
		}
	}
	return dst
}

func (rd *renderer) appendHistogram(dst []byte, f *frame, name string, labels []byte, r *row, om bool) []byte {
	bs := r.bounds
	les := bs.leText
	if om {
		les = bs.leOM
	}
	// Exemplars go to the first bucket whose bound is >= their value, the
	// last one winning, or to an explicit +Inf bucket (client_golang).
	var exAt []int32
	var exInf int32 = -1
	if om && r.nExs > 0 {
		exAt = make([]int32, len(les))
		for k := range exAt {
			exAt[k] = -1
		}
		for e := r.exs; e < r.exs+r.nExs; e++ {
			v := f.exs[e].value
			k, _ := slices.BinarySearchFunc(bs.order, v, func(idx int, v float64) int {
				b := bs.bounds[idx]
				if b < v {
					return -1
				}
				return 1
			})
			if k < len(les) {
				exAt[k] = e
			} else {
				exInf = e
			}
		}
	}
	counts := f.counts[r.counts : r.counts+r.nCounts]
	for k, le := range les {
		dst = appendSampleStart(dst, name, "_bucket", labels, le)
		dst = rd.appendCount(dst, counts[k], om)
		dst = rd.appendTimestamp(dst, r.ts, om)
		if exAt != nil && exAt[k] >= 0 {
			dst = rd.appendExemplar(dst, &f.exs[exAt[k]])
		}
		dst = append(dst, '\n')
	}
	if !bs.hasInf {
		dst = appendSampleStart(dst, name, "_bucket", labels, `le="+Inf"}`)
		dst = rd.appendCount(dst, r.count, om)
		dst = rd.appendTimestamp(dst, r.ts, om)
		if exInf >= 0 {
			dst = rd.appendExemplar(dst, &f.exs[exInf])
		}
		dst = append(dst, '\n')
	}
	return rd.appendSumCount(dst, name, labels, r, om)
}

// floatLabel is the last label of a sample, `name="v"}`, with label
// `name="` and v formatted for the format; it lives until the next call.
func (rd *renderer) floatLabel(label string, v float64, om bool) string {
	rd.num = append(rd.num[:0], label...)
	if om {
		rd.num = appendOMFloat(rd.num, v)
	} else {
		rd.num = appendTextFloat(rd.num, v)
	}
	rd.num = append(rd.num, `"}`...)
	return string(rd.num)
}

func (rd *renderer) appendSumCount(dst []byte, name string, labels []byte, r *row, om bool) []byte {
	dst = appendSampleStart(dst, name, "_sum", labels, "")
	dst = rd.appendValue(dst, r.value, om)
	dst = rd.appendTimestamp(dst, r.ts, om)
	dst = append(dst, '\n')
	dst = appendSampleStart(dst, name, "_count", labels, "")
	dst = rd.appendCount(dst, r.count, om)
	dst = rd.appendTimestamp(dst, r.ts, om)
	return append(dst, '\n')
}

// appendSampleStart writes `name{labels,extra}` where extra is a
// pre-rendered `le="..."}`-style pair including the closing brace.
func appendSampleStart(dst []byte, name, suffix string, labels []byte, extra string) []byte {
	dst = append(dst, name...)
	dst = append(dst, suffix...)
	switch {
	case len(labels) == 0 && extra == "":
		return dst
	case extra == "":
		dst = append(dst, '{')
		dst = append(dst, labels...)
		return append(dst, '}')
	case len(labels) == 0:
		dst = append(dst, '{')
		return append(dst, extra...)
	}
	dst = append(dst, '{')
	dst = append(dst, labels...)
	dst = append(dst, ',')
	return append(dst, extra...)
}

func appendHeader(dst []byte, name, help string, typ familyType, om bool) []byte {
	compliant := name
	if om && typ == typeCounter && strings.HasSuffix(name, "_total") {
		compliant = name[:len(name)-len("_total")]
	}
	dst = append(dst, "# HELP "...)
	dst = append(dst, compliant...)
	dst = append(dst, ' ')
	dst = appendEscaped(dst, help, om)
	dst = append(dst, "\n# TYPE "...)
	dst = append(dst, compliant...)
	switch typ {
	case typeCounter:
		if om && !strings.HasSuffix(name, "_total") {
			dst = append(dst, " unknown\n"...)
		} else {
			dst = append(dst, " counter\n"...)
		}
	case typeGauge:
		dst = append(dst, " gauge\n"...)
	case typeUntyped:
		if om {
			dst = append(dst, " unknown\n"...)
		} else {
			dst = append(dst, " untyped\n"...)
		}
	case typeHistogram:
		dst = append(dst, " histogram\n"...)
	case typeSummary:
		dst = append(dst, " summary\n"...)
	}
	return dst
}

func (rd *renderer) appendValue(dst []byte, v float64, om bool) []byte {
	dst = append(dst, ' ')
	if om {
		return appendOMFloat(dst, v)
	}
	return appendTextFloat(dst, v)
}

// appendCount writes a count: OpenMetrics as an integer, text as a float
// (1e+06 style above a million), as expfmt does.
func (rd *renderer) appendCount(dst []byte, c uint64, om bool) []byte {
	dst = append(dst, ' ')
	if om {
		return strconv.AppendUint(dst, c, 10)
	}
	return appendTextFloat(dst, float64(c))
}

func (rd *renderer) appendTimestamp(dst []byte, ms int64, om bool) []byte {
	if !rd.withTimestamps {
		return dst
	}
	dst = append(dst, ' ')
	if om {
		return appendOMFloat(dst, float64(ms)/1000)
	}
	return strconv.AppendInt(dst, ms, 10)
}

func (rd *renderer) appendExemplar(dst []byte, e *exemplar) []byte {
	if !e.hasLabels() {
		return dst
	}
	dst = append(dst, " # {"...)
	dst = e.appendLabels(dst)
	dst = append(dst, "} "...)
	dst = appendOMFloat(dst, e.value)
	dst = append(dst, ' ')
	return appendOMFloat(dst, float64(e.ts.AsTime().UnixNano())/1e9)
}

// appendTextFloat formats like expfmt's writeFloat. Integers below a million
// take the AppendInt path: the shortest 'g' form prints them identically.
func appendTextFloat(dst []byte, f float64) []byte {
	switch {
	case f == 0:
		return append(dst, '0')
	case f == 1:
		return append(dst, '1')
	case f == -1:
		return append(dst, '-', '1')
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, +1):
		return append(dst, "+Inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-Inf"...)
	case f > -1e6 && f < 1e6 && f == math.Trunc(f):
		return strconv.AppendInt(dst, int64(f), 10)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// appendOMFloat formats like expfmt's writeOpenMetricsFloat: as text, but a
// number without '.' or 'e' gets ".0".
func appendOMFloat(dst []byte, f float64) []byte {
	switch {
	case f == 0:
		return append(dst, "0.0"...)
	case f == 1:
		return append(dst, "1.0"...)
	case f == -1:
		return append(dst, "-1.0"...)
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, +1):
		return append(dst, "+Inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-Inf"...)
	}
	start := len(dst)
	dst = appendTextFloat(dst, f)
	if !bytes.ContainsAny(dst[start:], "e.") {
		dst = append(dst, '.', '0')
	}
	return dst
}
