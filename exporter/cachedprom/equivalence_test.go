package cachedprom

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/resourcetotelemetry"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
)

// configVariant sets the same keys on both exporters, and feature gates
// (by ID) that both read, for the variant's duration.
type configVariant struct {
	name  string
	ours  func(*Config)
	stock func(*prometheusexporter.Config)
	gates map[string]bool
}

var configVariants = []configVariant{
	{name: "defaults"},
	{
		name: "namespace_const_labels_timestamps",
		ours: func(c *Config) {
			c.Namespace, c.SendTimestamps = "red", true
			c.ConstLabels = map[string]string{"region": "eu-1", "tier": `a"b`}
		},
		stock: func(c *prometheusexporter.Config) {
			c.Namespace, c.SendTimestamps = "red", true
			c.ConstLabels = map[string]string{"region": "eu-1", "tier": `a"b`}
		},
	},
	{
		name:  "without_scope_info_no_suffixes",
		ours:  func(c *Config) { c.WithoutScopeInfo, c.AddMetricSuffixes = true, false },
		stock: func(c *prometheusexporter.Config) { c.WithoutScopeInfo, c.AddMetricSuffixes = true, false },
	},
	{
		name: "resource_to_telemetry",
		ours: func(c *Config) {
			c.ResourceToTelemetrySettings.Enabled = true
			c.TranslationStrategy = underscoreEscapingWithoutSuffixes
		},
		stock: func(c *prometheusexporter.Config) {
			c.ResourceToTelemetrySettings.Enabled = true
			c.TranslationStrategy = "UnderscoreEscapingWithoutSuffixes"
		},
	},
	{
		name:  "utf8_names",
		ours:  func(c *Config) { c.TranslationStrategy = noUTF8EscapingWithSuffixes },
		stock: func(c *prometheusexporter.Config) { c.TranslationStrategy = "NoUTF8EscapingWithSuffixes" },
	},
	{
		name:  "open_metrics",
		ours:  func(c *Config) { c.EnableOpenMetrics = true },
		stock: func(c *prometheusexporter.Config) { c.EnableOpenMetrics = true },
	},
	{
		// Patterns with both wildcards; the service attributes that make
		// job and instance become labels too.
		name: "resource_constant_labels",
		ours: func(c *Config) {
			c.ResourceConstantLabels.Included = []string{"k8s.*", "host.?ame", "service.name", "process.pid"}
			c.ResourceConstantLabels.Excluded = []string{"k8s.node*"}
		},
		stock: func(c *prometheusexporter.Config) {
			c.ResourceConstantLabels.Included = []string{"k8s.*", "host.?ame", "service.name", "process.pid"}
			c.ResourceConstantLabels.Excluded = []string{"k8s.node*"}
		},
	},
	{
		name: "resource_constant_labels_excluded_only",
		ours: func(c *Config) { c.ResourceConstantLabels.Excluded = []string{"service.*", "cloud.region"} },
		stock: func(c *prometheusexporter.Config) {
			c.ResourceConstantLabels.Excluded = []string{"service.*", "cloud.region"}
		},
	},
	{
		name: "resource_to_telemetry_without_service_attributes",
		ours: func(c *Config) {
			c.ResourceToTelemetrySettings.Enabled, c.ResourceToTelemetrySettings.ExcludeServiceAttributes = true, true
		},
		stock: func(c *prometheusexporter.Config) {
			c.ResourceToTelemetrySettings.Enabled, c.ResourceToTelemetrySettings.ExcludeServiceAttributes = true, true
		},
	},
	{
		// The deprecated key with the new patterns: still taken.
		name: "resource_to_telemetry_patterns",
		ours: func(c *Config) { c.ResourceToTelemetrySettings.Included = []string{"host.name", "cloud.*"} },
		stock: func(c *prometheusexporter.Config) {
			c.ResourceToTelemetrySettings.Included = []string{"host.name", "cloud.*"}
		},
	},
	{
		// The strategy wins over add_metric_suffixes.
		name: "underscore_escaping_with_suffixes",
		ours: func(c *Config) { c.TranslationStrategy, c.AddMetricSuffixes = underscoreEscapingWithSuffixes, false },
		stock: func(c *prometheusexporter.Config) {
			c.TranslationStrategy, c.AddMetricSuffixes = "UnderscoreEscapingWithSuffixes", false
		},
	},
	{
		name:  "no_translation",
		ours:  func(c *Config) { c.TranslationStrategy, c.Namespace = noTranslation, "red" },
		stock: func(c *prometheusexporter.Config) { c.TranslationStrategy, c.Namespace = "NoTranslation", "red" },
	},
	{
		// add_metric_suffixes: false is honoured again with the gate off.
		name:  "gate_add_metric_suffixes_honoured",
		ours:  func(c *Config) { c.AddMetricSuffixes = false },
		stock: func(c *prometheusexporter.Config) { c.AddMetricSuffixes = false },
		gates: map[string]bool{disableAddMetricSuffixesGate: false},
	},
	{
		name:  "gate_no_resource_to_telemetry",
		ours:  func(c *Config) { c.ResourceConstantLabels.Included = []string{"*"} },
		stock: func(c *prometheusexporter.Config) { c.ResourceConstantLabels.Included = []string{"*"} },
		gates: map[string]bool{disableResourceToTelemetryConversionGate: true},
	},
	{
		name:  "gate_keep_identifying_resource_attributes",
		gates: map[string]bool{keepIdentifyingResourceAttributesGate: true},
	},
	{
		// With UTF-8 names the kept attributes' names are not escaped
		// by the translator.
		name:  "gate_keep_identifying_resource_attributes_utf8",
		ours:  func(c *Config) { c.TranslationStrategy = noUTF8EscapingWithSuffixes },
		stock: func(c *prometheusexporter.Config) { c.TranslationStrategy = "NoUTF8EscapingWithSuffixes" },
		gates: map[string]bool{keepIdentifyingResourceAttributesGate: true},
	},
	{
		// The translator package's unit gate changes its own name
		// builders, which neither exporter uses (both name through
		// otlptranslator): the names must stay the same.
		name:  "gate_correct_ucum_units",
		gates: map[string]bool{"pkg.translator.prometheus.CorrectUCUMUnits": true},
	},
}

// setGates sets the variant's feature gates until the test ends.
func (v configVariant) setGates(tb testing.TB) {
	tb.Helper()
	for id, on := range v.gates {
		setGate(tb, id, on)
	}
}

// feedBoth sends each batch to both exporters; each gets its own copy
// because the stock exporter mutates what it is given.
func feedBoth(t *testing.T, ours *cachedExporter, stock consumer.Metrics, batches ...pmetric.Metrics) {
	t.Helper()
	ctx := context.Background()
	for _, b := range batches {
		c1, c2 := pmetric.NewMetrics(), pmetric.NewMetrics()
		b.CopyTo(c1)
		b.CopyTo(c2)
		// Through the same wrapper, with the same settings, as the factory.
		set, _ := ours.cfg.resourceLabels(ours.gates.noResourceToTelemetry)
		wrapped := resourcetotelemetry.WrapMetricsExporter(set, ours)
		require.NoError(t, wrapped.ConsumeMetrics(ctx, c1))
		require.NoError(t, stock.ConsumeMetrics(ctx, c2))
	}
	ours.renderNow()
}

// TestEquivalentToPrometheusExporter feeds identical data to cachedprom and
// the contrib prometheus exporter, scrapes both over HTTP and compares the
// parsed families and the sorted exposition lines.
func TestEquivalentToPrometheusExporter(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	inputs := map[string]func(t *testing.T) []pmetric.Metrics{
		"mixed": func(*testing.T) []pmetric.Metrics {
			return []pmetric.Metrics{promtest.WithRecentCases(0, base), promtest.WithRecentCases(1, base)}
		},
		"spanmetrics_cumulative": func(t *testing.T) []pmetric.Metrics {
			return spanmetricsOutput(t, "AGGREGATION_TEMPORALITY_CUMULATIVE", testTraces(3, 12, base), testTraces(4, 6, base))
		},
		"spanmetrics_delta": func(t *testing.T) []pmetric.Metrics {
			return spanmetricsOutput(t, "AGGREGATION_TEMPORALITY_DELTA", testTraces(2, 8, base), testTraces(3, 8, base))
		},
		"tracemetrics_cumulative": func(t *testing.T) []pmetric.Metrics {
			return tracemetricsOutput(t, "AGGREGATION_TEMPORALITY_CUMULATIVE", testTraces(3, 12, base), testTraces(4, 6, base))
		},
		"tracemetrics_delta": func(t *testing.T) []pmetric.Metrics {
			return tracemetricsOutput(t, "AGGREGATION_TEMPORALITY_DELTA", testTraces(2, 8, base), testTraces(3, 8, base))
		},
	}
	for _, v := range configVariants {
		for inName, input := range inputs {
			t.Run(v.name+"/"+inName, func(t *testing.T) {
				v.setGates(t)
				ours, ourURL := startOurs(t, v.ours)
				stock, stockURL := promtest.StartStock(t, v.stock)
				feedBoth(t, ours, stock, input(t)...)

				stockBody, stockResp := promtest.Scrape(t, stockURL, "", false)
				ourBody, ourResp := promtest.Scrape(t, ourURL, "", false)
				assert.Equal(t, stockResp.Header.Get("Content-Type"), ourResp.Header.Get("Content-Type"))
				require.NotEmpty(t, stockBody)
				assertSameMaps(t, promtest.ParseText(t, stockBody), promtest.ParseText(t, ourBody), "parsed families")
				assertSameLines(t, stockBody, ourBody, "text lines")

				gzBody, gzResp := promtest.Scrape(t, ourURL, "", true)
				assert.Equal(t, "gzip", gzResp.Header.Get("Content-Encoding"))
				assert.Equal(t, ourBody, gzBody)

				// Protobuf, as Prometheus 3 with native histograms asks:
				// our first such scrape gets text and asks for a render.
				stockPB, stockResp := promtest.Scrape(t, stockURL, acceptProm3Native, true)
				promtest.Scrape(t, ourURL, acceptProm3Native, true)
				ours.renderNow()
				ourPB, ourResp := promtest.Scrape(t, ourURL, acceptProm3Native, true)
				assert.Equal(t, stockResp.Header.Get("Content-Type"), ourResp.Header.Get("Content-Type"))
				assertSameMaps(t, flattenWithNative(t, promtest.DecodeProto(t, stockPB)), flattenWithNative(t, promtest.DecodeProto(t, ourPB)), "protobuf families")

				if v.name == "open_metrics" {
					accept := "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
					stockOM, stockResp := promtest.Scrape(t, stockURL, accept, false)
					ourOM, ourResp := promtest.Scrape(t, ourURL, accept, true)
					assert.Equal(t, stockResp.Header.Get("Content-Type"), ourResp.Header.Get("Content-Type"))
					assert.True(t, strings.HasSuffix(string(ourOM), "# EOF\n"))
					assertSameLines(t, stockOM, ourOM, "OpenMetrics lines")
				}
			})
		}
	}
}

// flattenWithNative flattens decoded protobuf families as flattenProto does,
// adding each series' created timestamp and what native histograms hold
// besides count and sum: schema, zero threshold and count, the count of
// each non-empty bucket (not the layout: the stock exporter writes OTLP's
// empty buckets as explicit zeros), and exemplars (as a set: the stock
// exporter writes their labels in map order).
func flattenWithNative(tb testing.TB, fams []*dto.MetricFamily) map[string]string {
	tb.Helper()
	out := flattenProto(tb, fams)
	for _, mf := range fams {
		for _, m := range mf.Metric {
			// The stock exporter writes 0001-01-01 for a native histogram
			// without a start time, which reads as none.
			if ct := createdOf(m); ct != nil && ct.AsTime().Unix() > 0 {
				out[seriesKey(mf, m)+"|created"] = ct.AsTime().Format(time.RFC3339Nano)
			}
			h := m.Histogram
			if h == nil || h.Schema == nil {
				continue
			}
			key := seriesKey(mf, m) + " native"
			out[key] = fmt.Sprintf("schema %d zero %g/%d pos %v neg %v", h.GetSchema(), h.GetZeroThreshold(), h.GetZeroCount(),
				promtest.NativeBucketMap(h.PositiveSpan, h.PositiveDelta), promtest.NativeBucketMap(h.NegativeSpan, h.NegativeDelta))
			if len(h.Exemplars) > 0 {
				out[key+" exemplars"] = strings.Join(promtest.ExemplarStrings(h.Exemplars), " ")
			}
		}
	}
	return out
}

// seriesKey names a decoded series by family and sorted labels.
func seriesKey(mf *dto.MetricFamily, m *dto.Metric) string {
	var lbls []string
	for _, l := range m.Label {
		lbls = append(lbls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	sort.Strings(lbls)
	return mf.GetName() + "{" + strings.Join(lbls, ",") + "}"
}

// createdOf is a decoded series' created timestamp, nil when it has none.
func createdOf(m *dto.Metric) *timestamppb.Timestamp {
	switch {
	case m.Counter != nil:
		return m.Counter.CreatedTimestamp
	case m.Histogram != nil:
		return m.Histogram.CreatedTimestamp
	case m.Summary != nil:
		return m.Summary.CreatedTimestamp
	}
	return nil
}

// TestNativeDeltasEquivalentToPrometheusExporter feeds both exporters
// delta exponential histograms whose scales change from point to point
// (downscaling sides at any offset, negative indexes, zero thresholds) and
// compares the native histograms served. Until v0.145.0 the stock exporter
// doubled the first bucket of a side whose offset was not a multiple of
// the downscaling factor, so the input kept to aligned offsets; v0.165.1
// downscales correctly. The input still keeps each series' zero threshold
// the same: when the threshold widens the stock exporter computes bucket
// bounds as 2^(scale+index+1) and moves only positive buckets. Widening is
// checked by hand in TestExpBucketsDeltasAdd.
func TestNativeDeltasEquivalentToPrometheusExporter(t *testing.T) {
	ours, ourURL := startOurs(t, nil)
	stock, stockURL := promtest.StartStock(t, nil)
	r := rand.New(rand.NewPCG(7, 8))
	// Recent: the stock exporter expires series by their points' time.
	base := time.Now().Add(-6 * time.Minute)
	const series = 6
	var batches []pmetric.Metrics
	for i := range 6 {
		md := pmetric.NewMetrics()
		m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName("latency")
		h := m.SetEmptyExponentialHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
		for s := range series {
			p := promtest.ExpPoint{Scale: int32(r.IntN(6)) - 1, ZeroCount: uint64(r.IntN(3)), Sum: float64(r.IntN(100))}
			p.PosOffset = int32(r.IntN(100) - 50)
			for range r.IntN(40) {
				p.Pos = append(p.Pos, uint64(r.IntN(4)))
			}
			if s%2 == 0 {
				p.NegOffset = int32(r.IntN(100) - 50)
				for range r.IntN(40) {
					p.Neg = append(p.Neg, uint64(r.IntN(4)))
				}
			} else {
				p.ZeroThreshold = math.Exp2(-float64(s))
			}
			dp := h.DataPoints().AppendEmpty()
			p.Build().CopyTo(dp)
			dp.Attributes().PutInt("series", int64(s))
			dp.SetStartTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(i) * time.Minute)))
			dp.SetTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(i+1) * time.Minute)))
		}
		batches = append(batches, md)
	}
	feedBoth(t, ours, stock, batches...)
	stockPB, _ := promtest.Scrape(t, stockURL, acceptProm3Native, true)
	promtest.Scrape(t, ourURL, acceptProm3Native, true)
	ours.renderNow()
	ourPB, resp := promtest.Scrape(t, ourURL, acceptProm3Native, true)
	require.Equal(t, wantContentTypeProto, resp.Header.Get("Content-Type"))
	want := flattenWithNative(t, promtest.DecodeProto(t, stockPB))
	require.Len(t, want, 2+series*5, "type, help, and per series sum, count, +Inf, native, created")
	assertSameMaps(t, want, flattenWithNative(t, promtest.DecodeProto(t, ourPB)), "native histograms")
}
