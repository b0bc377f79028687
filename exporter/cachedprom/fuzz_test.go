package cachedprom

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"
)

// FuzzRender renders arbitrary metric names, label names, label values and
// descriptions, parses the exposition back with prometheus/common's text
// parser and Prometheus' text and OpenMetrics parsers, and checks that it
// parses, has no duplicate series, and that values and labels round-trip.
// The seed corpus runs as a normal test; `go test -fuzz=FuzzRender` explores.
func FuzzRender(f *testing.F) {
	f.Add("http.server.duration", "http.route", "/a", "help", 1.5)
	f.Add("q", "k", `quo"te`, `back\slash`, 0.0)
	f.Add("q", "k", "new\nline", "new\nline help", -1.0)
	f.Add("ünï.cödé", "läbel", "🙂 \\n \\\" \\\\", "\"quoted\"", math.Inf(1))
	f.Add("x", "__reserved", "v", "", math.NaN())
	f.Add("", "", "", "", 1e21)
	f.Add("9starts.with.digit", "9label", "\x00\x01", "\t", 1234567.0)
	f.Add("a", "otel_scope_name", "dup", "h", 2.0)
	f.Add("a", "k", "\xff\xfe", "h", 3.0)
	f.Fuzz(func(t *testing.T, metricName, labelName, labelValue, help string, value float64) {
		cfg := createDefaultConfig().(*Config)
		s := newStore(cfg, readGates(), zap.NewNop())
		defer s.Close()
		md := pmetric.NewMetrics()
		ms := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics()
		ts := pcommon.NewTimestampFromTime(time.Unix(1_700_000_000, 0))

		g := ms.AppendEmpty()
		g.SetName(metricName)
		g.SetDescription(help)
		dp := g.SetEmptyGauge().DataPoints().AppendEmpty()
		dp.Attributes().PutStr(labelName, labelValue)
		dp.SetTimestamp(ts)
		dp.SetDoubleValue(value)

		h := ms.AppendEmpty()
		h.SetName(metricName + ".hist")
		h.SetDescription(help)
		hh := h.SetEmptyHistogram()
		hh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		hp := hh.DataPoints().AppendEmpty()
		hp.Attributes().PutStr(labelName, labelValue)
		hp.SetTimestamp(ts)
		bound := value
		if math.IsNaN(bound) {
			bound = 0
		}
		hp.ExplicitBounds().FromRaw([]float64{bound})
		hp.BucketCounts().FromRaw([]uint64{3, 4})
		hp.SetCount(7)
		hp.SetSum(value)

		s.Consume(md, time.Now())
		rd := render.New(render.Options{})
		text := rd.Text(nil, s)

		// Prometheus' own parsers, both formats, and no duplicate series.
		promtest.CheckExposition(t, text, false)
		promtest.CheckExposition(t, rd.OpenMetrics(nil, s), true)
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
		if err != nil {
			t.Fatalf("exposition does not parse: %v\n%s", err, text)
		}
		// The protobuf body holds what the text holds; HELP compared
		// below, since the text loses its leading blanks.
		pbFams := promtest.DecodeProto(t, rd.Proto(nil, s))
		fromText, fromProto := promtest.FlattenFamilies(fams), flattenProto(t, pbFams)
		for _, m := range []map[string]string{fromText, fromProto} {
			for k := range m {
				if strings.HasSuffix(k, "|help") {
					delete(m, k)
				}
			}
		}
		assertSameMaps(t, fromText, fromProto, "protobuf vs text")
		for _, mf := range pbFams {
			if want := strings.ToValidUTF8(help, "\uFFFD"); mf.GetName() != "target_info" && mf.GetHelp() != want {
				t.Fatalf("protobuf help %q came back as %q", want, mf.GetHelp())
			}
		}
		names := newNamer(cfg, readGates())
		gaugeName, err := names.MetricName(g)
		if err != nil || s.Sizes().Rows == 0 {
			return // refused, like the stock exporter; it still had to parse
		}
		lname, _ := names.LabelName(labelName)
		mf, ok := fams[gaugeName]
		if !ok {
			t.Fatalf("family %q missing from\n%s", gaugeName, text)
		}
		// The text format cannot carry leading blanks in HELP: the parser
		// skips them (the stock exporter's output loses them the same way).
		if want := strings.TrimLeft(strings.ToValidUTF8(help, "\uFFFD"), " \t"); mf.GetHelp() != want {
			t.Fatalf("help %q came back as %q", want, mf.GetHelp())
		}
		// Invalid UTF-8 is repaired, not refused; a label named like a scope
		// label has its value joined with it.
		wantValue := strings.ToValidUTF8(labelValue, "\uFFFD")
		found := strings.HasPrefix(lname, "otel_scope_")
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == lname && l.GetValue() == wantValue {
					found = true
				}
			}
			got := m.GetGauge().GetValue()
			if got != value && !(math.IsNaN(got) && math.IsNaN(value)) {
				t.Fatalf("value %v came back as %v", value, got)
			}
		}
		if !found {
			t.Fatalf("label %s=%q not found in\n%s", lname, labelValue, text)
		}
	})
}
