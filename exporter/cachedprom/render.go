package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"bytes"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// frame is a consistent copy of the values to render, taken under the store
// lock in one pass; formatting happens after the lock is released, so ingest
// waits only for the copy, never for formatting or compression.
type frame struct {
	families []frameFamily
	rows     []row
	counts   []uint64 // cumulative bucket counts of histogram rows
	exs      []exemplar
	targets  []string // target_info label sets
	target   string   // target_info family name
}

type frameFamily struct {
	name, help string
	typ        familyType
	rows       int // number of rows belonging to this family, in order
}

// row is one series' values. labels and bounds are immutable, so sharing them
// with the store is safe.
type row struct {
	labels  string
	kind    seriesKind
	value   float64 // number value, or sum
	count   uint64
	ts      int64 // milliseconds, when send_timestamps
	bounds  *boundSet
	counts  int32 // offset into frame.counts (histograms) or quantiles
	nCounts int32
	exs     int32 // offset into frame.exs
	nExs    int32
	valid   bool // false for a series the stock exporter would refuse to render
}

// copyFrame fills f from the store. Families are sorted by name, as
// client_golang's registry sorts them, so bodies are stable.
func (s *seriesStore) copyFrame(f *frame, withTimestamps bool) {
	f.families = f.families[:0]
	f.rows = f.rows[:0]
	f.counts = f.counts[:0]
	f.exs = f.exs[:0]
	f.targets = f.targets[:0]
	f.target = s.names.targetInfoName()

	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.resources {
		if r.refs > 0 && r.labels != "" {
			f.targets = append(f.targets, r.labels)
		}
	}
	// Sorted so that equal content renders to equal bytes (and ETag).
	slices.Sort(f.targets)
	fams := make([]*family, 0, len(s.families))
	for _, fam := range s.families {
		fams = append(fams, fam)
	}
	slices.SortFunc(fams, func(a, b *family) int { return strings.Compare(a.name, b.name) })
	for _, fam := range fams {
		f.families = append(f.families, frameFamily{name: fam.name, help: fam.help, typ: fam.typ, rows: len(fam.series)})
		for _, ser := range fam.series {
			r := row{labels: ser.labels, kind: ser.kind, valid: true}
			if withTimestamps {
				r.ts = int64(ser.ts) / 1e6
			}
			switch ser.kind {
			case kindNumber:
				r.value = ser.value
			case kindHistogram:
				r.value, r.count, r.bounds = ser.sum, ser.count, ser.bounds
				r.counts = int32(len(f.counts))
				var cum uint64
				for _, idx := range ser.bounds.order {
					if idx < len(ser.buckets) {
						cum += ser.buckets[idx]
					}
					f.counts = append(f.counts, cum)
				}
				r.nCounts = int32(len(ser.bounds.order))
			case kindExpHistogram:
				r.count = ser.count
				if ser.hasSum {
					r.value = ser.sum
				}
				// client_golang refuses these schemas and populations.
				const customBucketsScale = -53
				r.valid = ser.scale != customBucketsScale && ser.scale >= -4
				if math.IsNaN(r.value) {
					r.valid = r.valid && ser.population <= ser.count
				} else {
					r.valid = r.valid && ser.population == ser.count
				}
			case kindSummary:
				r.value, r.count = ser.sum, ser.count
				r.counts = int32(len(f.counts))
				for _, q := range ser.quantiles {
					f.counts = append(f.counts, math.Float64bits(q.q), math.Float64bits(q.v))
				}
				r.nCounts = int32(len(ser.quantiles))
			}
			if len(ser.exemplars) > 0 {
				r.exs = int32(len(f.exs))
				f.exs = append(f.exs, ser.exemplars...)
				r.nExs = int32(len(ser.exemplars))
			}
			f.rows = append(f.rows, r)
		}
	}
}

// renderer formats frames. It owns reusable buffers.
type renderer struct {
	withTimestamps bool
	num            []byte

	// sink, when set, receives the body in chunks of about streamChunk
	// bytes instead of it being accumulated: the gzip-only form is built
	// without ever holding the uncompressed body.
	sink    io.Writer
	written int
}

// streamChunk is the size of the pieces handed to the sink; big enough to
// amortise the call, small enough to stay in cache.
const streamChunk = 256 << 10

// flushChunk hands dst to the sink once it is large enough.
func (rd *renderer) flushChunk(dst []byte, force bool) []byte {
	if rd.sink == nil || (!force && len(dst) < streamChunk) {
		return dst
	}
	_, _ = rd.sink.Write(dst) // the sink is a gzip writer over a bytes.Buffer
	rd.written += len(dst)
	return dst[:0]
}

// renderText appends the text 0.0.4 exposition of f to dst.
func (rd *renderer) renderText(dst []byte, f *frame) []byte {
	return rd.render(dst, f, false)
}

// renderOpenMetrics appends the OpenMetrics 1.0 exposition of f to dst.
func (rd *renderer) renderOpenMetrics(dst []byte, f *frame) []byte {
	dst = rd.render(dst, f, true)
	return append(dst, "# EOF\n"...)
}

func (rd *renderer) render(dst []byte, f *frame, om bool) []byte {
	if len(f.targets) > 0 {
		dst = appendHeader(dst, f.target, "Target metadata", typeGauge, om)
		for _, l := range f.targets {
			dst = appendSampleStart(dst, f.target, "", l, "")
			if om {
				dst = append(dst, " 1.0\n"...)
			} else {
				dst = append(dst, " 1\n"...)
			}
		}
	}
	i := 0
	for _, fam := range f.families {
		rows := f.rows[i : i+fam.rows]
		i += fam.rows
		headerDone := false
		name := fam.name
		for ri := range rows {
			dst = rd.flushChunk(dst, false)
			r := &rows[ri]
			if !r.valid {
				continue
			}
			if !headerDone {
				dst = appendHeader(dst, name, fam.help, fam.typ, om)
				headerDone = true
			}
			switch r.kind {
			case kindNumber:
				dst = appendSampleStart(dst, name, "", r.labels, "")
				dst = rd.appendValue(dst, r.value, om)
				dst = rd.appendTimestamp(dst, r.ts, om)
				if om && fam.typ == typeCounter && r.nExs > 0 {
					dst = rd.appendExemplar(dst, &f.exs[r.exs+r.nExs-1])
				}
				dst = append(dst, '\n')
			case kindHistogram:
				dst = rd.appendHistogram(dst, f, name, r, om)
			case kindExpHistogram:
				le := `le="+Inf"}`
				dst = appendSampleStart(dst, name, "_bucket", r.labels, le)
				dst = rd.appendCount(dst, r.count, om)
				dst = rd.appendTimestamp(dst, r.ts, om)
				dst = append(dst, '\n')
				dst = rd.appendSumCount(dst, name, r, om)
			case kindSummary:
				for q := int32(0); q < r.nCounts; q++ {
					qv := math.Float64frombits(f.counts[r.counts+2*q])
					v := math.Float64frombits(f.counts[r.counts+2*q+1])
					rd.num = append(rd.num[:0], `quantile="`...)
					if om {
						rd.num = appendOMFloat(rd.num, qv)
					} else {
						rd.num = appendTextFloat(rd.num, qv)
					}
					rd.num = append(rd.num, `"}`...)
					dst = appendSampleStart(dst, name, "", r.labels, string(rd.num))
					dst = rd.appendValue(dst, v, om)
					dst = rd.appendTimestamp(dst, r.ts, om)
					dst = append(dst, '\n')
				}
				dst = rd.appendSumCount(dst, name, r, om)
			}
		}
	}
	return dst
}

func (rd *renderer) appendHistogram(dst []byte, f *frame, name string, r *row, om bool) []byte {
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
		dst = appendSampleStart(dst, name, "_bucket", r.labels, le)
		dst = rd.appendCount(dst, counts[k], om)
		dst = rd.appendTimestamp(dst, r.ts, om)
		if exAt != nil && exAt[k] >= 0 {
			dst = rd.appendExemplar(dst, &f.exs[exAt[k]])
		}
		dst = append(dst, '\n')
	}
	if !bs.hasInf {
		dst = appendSampleStart(dst, name, "_bucket", r.labels, `le="+Inf"}`)
		dst = rd.appendCount(dst, r.count, om)
		dst = rd.appendTimestamp(dst, r.ts, om)
		if exInf >= 0 {
			dst = rd.appendExemplar(dst, &f.exs[exInf])
		}
		dst = append(dst, '\n')
	}
	return rd.appendSumCount(dst, name, r, om)
}

func (rd *renderer) appendSumCount(dst []byte, name string, r *row, om bool) []byte {
	dst = appendSampleStart(dst, name, "_sum", r.labels, "")
	dst = rd.appendValue(dst, r.value, om)
	dst = rd.appendTimestamp(dst, r.ts, om)
	dst = append(dst, '\n')
	dst = appendSampleStart(dst, name, "_count", r.labels, "")
	dst = rd.appendCount(dst, r.count, om)
	dst = rd.appendTimestamp(dst, r.ts, om)
	return append(dst, '\n')
}

// appendSampleStart writes `name{labels,extra}` where extra is a
// pre-rendered `le="..."}`-style pair including the closing brace.
func appendSampleStart(dst []byte, name, suffix, labels, extra string) []byte {
	dst = append(dst, name...)
	dst = append(dst, suffix...)
	switch {
	case labels == "" && extra == "":
		return dst
	case extra == "":
		dst = append(dst, '{')
		dst = append(dst, labels...)
		return append(dst, '}')
	case labels == "":
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
	if e.labels == "" {
		return dst
	}
	dst = append(dst, " # {"...)
	dst = append(dst, e.labels...)
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

// gzipLevel favours speed: the exposition is very repetitive, so level 1
// already compresses it well, and compression runs once per render.
const gzipLevel = gzip.BestSpeed

// renderCompressed builds the gzip form: the body is rendered in chunks
// straight into the compressor, through keep (which may collect a copy). It
// returns the gzip bytes and the length of the uncompressed body.
func (rd *renderer) renderCompressed(dst, scratch []byte, zw *gzip.Writer, keep *keepSink, render func([]byte) []byte) (gz, scratchOut []byte, bodyLen int) {
	buf := bytes.NewBuffer(dst[:0])
	zw.Reset(buf)
	keep.w = zw
	rd.sink, rd.written = keep, 0
	rest := render(scratch[:0])
	rest = rd.flushChunk(rest, true)
	bodyLen = rd.written
	rd.sink = nil
	_ = zw.Close()
	return buf.Bytes(), rest, bodyLen
}
