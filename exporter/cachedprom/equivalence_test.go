package cachedprom

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/resourcetotelemetry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// configVariant sets the same keys on both exporters.
type configVariant struct {
	name  string
	ours  func(*Config)
	stock func(*prometheusexporter.Config)
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
		// Through the same wrapper the factory adds.
		wrapped := resourcetotelemetry.WrapMetricsExporter(ours.cfg.ResourceToTelemetrySettings, ours)
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
			return []pmetric.Metrics{mixedMetrics(0, base), mixedMetrics(1, base)}
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
				ours, ourURL := startOurs(t, v.ours)
				stock, stockURL := startStock(t, v.stock)
				feedBoth(t, ours, stock, input(t)...)

				stockBody, stockResp := scrape(t, stockURL, "", false)
				ourBody, ourResp := scrape(t, ourURL, "", false)
				assert.Equal(t, stockResp.Header.Get("Content-Type"), ourResp.Header.Get("Content-Type"))
				require.NotEmpty(t, stockBody)
				assertSameMaps(t, parseText(t, stockBody), parseText(t, ourBody), "parsed families")
				assertSameLines(t, stockBody, ourBody, "text lines")

				gzBody, gzResp := scrape(t, ourURL, "", true)
				assert.Equal(t, "gzip", gzResp.Header.Get("Content-Encoding"))
				assert.Equal(t, ourBody, gzBody)

				if v.name == "open_metrics" {
					accept := "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
					stockOM, stockResp := scrape(t, stockURL, accept, false)
					ourOM, ourResp := scrape(t, ourURL, accept, true)
					assert.Equal(t, stockResp.Header.Get("Content-Type"), ourResp.Header.Get("Content-Type"))
					assert.True(t, strings.HasSuffix(string(ourOM), "# EOF\n"))
					assertSameLines(t, stockOM, ourOM, "OpenMetrics lines")
				}
			})
		}
	}
}
