package render // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/naming"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"
)

// This file writes the pieces of text 0.0.4 and OpenMetrics 1.0 lines, as
// expfmt writes them: headers, sample names with their labels, values,
// counts, timestamps and exemplars.

// lines writes the values of sample lines; it owns a small scratch buffer.
type lines struct {
	withTimestamps bool
	num            []byte
}

// floatLabel is the last label of a sample, `name="v"}`, with label
// `name="` and v formatted for the format; it lives until the next call.
func (w *lines) floatLabel(label string, v float64, om bool) string {
	w.num = append(w.num[:0], label...)
	if om {
		w.num = appendOMFloat(w.num, v)
	} else {
		w.num = appendTextFloat(w.num, v)
	}
	w.num = append(w.num, `"}`...)
	return string(w.num)
}

func (w *lines) appendSumCount(dst []byte, name string, labels []byte, r *store.Row, om bool) []byte {
	dst = appendSampleStart(dst, name, "_sum", labels, "")
	dst = w.appendValue(dst, r.Value, om)
	dst = w.appendTimestamp(dst, r.TS, om)
	dst = append(dst, '\n')
	dst = appendSampleStart(dst, name, "_count", labels, "")
	dst = w.appendCount(dst, r.Count, om)
	dst = w.appendTimestamp(dst, r.TS, om)
	return append(dst, '\n')
}

func (w *lines) appendValue(dst []byte, v float64, om bool) []byte {
	dst = append(dst, ' ')
	if om {
		return appendOMFloat(dst, v)
	}
	return appendTextFloat(dst, v)
}

// appendCount writes a count: OpenMetrics as an integer, text as a float
// (1e+06 style above a million), as expfmt does.
func (w *lines) appendCount(dst []byte, c uint64, om bool) []byte {
	dst = append(dst, ' ')
	if om {
		return strconv.AppendUint(dst, c, 10)
	}
	return appendTextFloat(dst, float64(c))
}

func (w *lines) appendTimestamp(dst []byte, ms int64, om bool) []byte {
	if !w.withTimestamps {
		return dst
	}
	dst = append(dst, ' ')
	if om {
		return appendOMFloat(dst, float64(ms)/1000)
	}
	return strconv.AppendInt(dst, ms, 10)
}

func appendExemplar(dst []byte, e *store.Exemplar) []byte {
	if !e.HasLabels() {
		return dst
	}
	dst = append(dst, " # {"...)
	dst = e.AppendLabels(dst)
	dst = append(dst, "} "...)
	dst = appendOMFloat(dst, e.Value)
	dst = append(dst, ' ')
	return appendOMFloat(dst, float64(e.TS.AsTime().UnixNano())/1e9)
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

func appendHeader(dst []byte, name, help string, typ store.FamilyType, om bool) []byte {
	compliant := name
	if om && typ == store.TypeCounter && strings.HasSuffix(name, "_total") {
		compliant = name[:len(name)-len("_total")]
	}
	dst = append(dst, "# HELP "...)
	dst = append(dst, compliant...)
	dst = append(dst, ' ')
	dst = naming.AppendEscaped(dst, help, om)
	dst = append(dst, "\n# TYPE "...)
	dst = append(dst, compliant...)
	switch typ {
	case store.TypeCounter:
		if om && !strings.HasSuffix(name, "_total") {
			dst = append(dst, " unknown\n"...)
		} else {
			dst = append(dst, " counter\n"...)
		}
	case store.TypeGauge:
		dst = append(dst, " gauge\n"...)
	case store.TypeUntyped:
		if om {
			dst = append(dst, " unknown\n"...)
		} else {
			dst = append(dst, " untyped\n"...)
		}
	case store.TypeHistogram:
		dst = append(dst, " histogram\n"...)
	case store.TypeSummary:
		dst = append(dst, " summary\n"...)
	}
	return dst
}

// leLabels are the `le` labels of one bound set's buckets, `le="0.005"}`
// per entry of its Order, in both formats' float forms.
type leLabels struct {
	done     bool
	text, om []string
}

func newLELabels(bs *store.BoundSet) leLabels {
	l := leLabels{done: true}
	for _, idx := range bs.Order {
		b := bs.Bounds[idx]
		l.text = append(l.text, `le="`+string(appendTextFloat(nil, b))+`"}`)
		l.om = append(l.om, `le="`+string(appendOMFloat(nil, b))+`"}`)
	}
	return l
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
