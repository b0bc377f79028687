package promtest // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/stretchr/testify/require"
)

// CheckExposition parses a body the way Prometheus ingests it (its own text
// or OpenMetrics parser) and fails on a parse error or a duplicate series,
// which Prometheus would reject for the whole scrape or per sample. The text
// form is also parsed with prometheus/common's parser by ParseText.
func CheckExposition(tb testing.TB, body []byte, om bool) {
	tb.Helper()
	st := labels.NewSymbolTable()
	var p textparse.Parser
	if om {
		p = textparse.NewOpenMetricsParser(body, st)
	} else {
		ParseText(tb, body)
		p = textparse.NewPromParser(body, st, false)
	}
	seen := map[string]bool{}
	for {
		et, err := p.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(tb, err, "exposition does not parse (openmetrics=%v):\n%s", om, body)
		if et != textparse.EntrySeries && et != textparse.EntryHistogram {
			continue
		}
		var l labels.Labels
		p.Labels(&l)
		key := l.String()
		require.False(tb, seen[key], "duplicate series %s (openmetrics=%v):\n%s", key, om, body)
		seen[key] = true
	}
}

// ParseText parses a text 0.0.4 exposition into a comparable form.
func ParseText(tb testing.TB, body []byte) map[string]string {
	tb.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	require.NoError(tb, err, "exposition does not parse:\n%s", body)
	return FlattenFamilies(fams)
}

// FlattenFamilies turns parsed families into "family|type|help" and
// "family{sorted labels}|kind" keys with their values, so two expositions can
// be compared regardless of order.
func FlattenFamilies(fams map[string]*dto.MetricFamily) map[string]string {
	out := map[string]string{}
	for name, mf := range fams {
		out[name+"|type"] = mf.GetType().String()
		out[name+"|help"] = mf.GetHelp()
		for _, m := range mf.Metric {
			var lbls []string
			for _, l := range m.Label {
				lbls = append(lbls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(lbls)
			key := name + "{" + strings.Join(lbls, ",") + "}"
			switch {
			case m.Counter != nil:
				out[key] = FmtVal(m.Counter.GetValue())
			case m.Gauge != nil:
				out[key] = FmtVal(m.Gauge.GetValue())
			case m.Untyped != nil:
				out[key] = FmtVal(m.Untyped.GetValue())
			case m.Summary != nil:
				out[key+"_sum"] = FmtVal(m.Summary.GetSampleSum())
				out[key+"_count"] = fmt.Sprint(m.Summary.GetSampleCount())
				for _, q := range m.Summary.Quantile {
					out[key+"q"+FmtVal(q.GetQuantile())] = FmtVal(q.GetValue())
				}
			case m.Histogram != nil:
				out[key+"_sum"] = FmtVal(m.Histogram.GetSampleSum())
				out[key+"_count"] = fmt.Sprint(m.Histogram.GetSampleCount())
				for _, b := range m.Histogram.Bucket {
					out[key+"le"+FmtVal(b.GetUpperBound())] = fmt.Sprint(b.GetCumulativeCount())
				}
			}
			if m.TimestampMs != nil {
				out[key+"|ts"] = fmt.Sprint(m.GetTimestampMs())
			}
		}
	}
	return out
}

// SumSamples adds the values of the sample lines that start with prefix;
// the body must parse.
func SumSamples(tb testing.TB, body, prefix string) float64 {
	tb.Helper()
	ParseText(tb, []byte(body))
	var total float64
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		require.NoError(tb, err, line)
		total += f
	}
	return total
}

// FmtVal formats a sample value for FlattenFamilies.
func FmtVal(f float64) string {
	if math.IsNaN(f) {
		return "NaN"
	}
	return fmt.Sprint(f)
}

// DecodeProto decodes a delimited protobuf exposition with expfmt, in order.
func DecodeProto(tb testing.TB, body []byte) []*dto.MetricFamily {
	tb.Helper()
	dec := expfmt.NewDecoder(bytes.NewReader(body), expfmt.NewFormat(expfmt.TypeProtoDelim))
	var fams []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			return fams
		}
		require.NoError(tb, err)
		fams = append(fams, mf)
	}
}

// GunzipOneMember decodes gz as a reader that stops after the first gzip
// member (as curl does) and checks nothing follows it: what such a reader
// gets is the whole body.
func GunzipOneMember(tb testing.TB, gz []byte) []byte {
	tb.Helper()
	br := bytes.NewReader(gz)
	zr, err := gzip.NewReader(br)
	require.NoError(tb, err)
	zr.Multistream(false)
	b, err := io.ReadAll(zr)
	require.NoError(tb, err, "the member, its CRC-32 and length check out")
	require.Zero(tb, br.Len(), "nothing follows the first member")
	return b
}

// Gunzip inflates a gzip body.
func Gunzip(tb testing.TB, gz []byte) []byte {
	tb.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	require.NoError(tb, err)
	b, err := io.ReadAll(zr)
	require.NoError(tb, err)
	return b
}
