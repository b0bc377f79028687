package tracemetrics

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/connector/spanmetricsconnector"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// update rewrites the expected metrics of the golden cases from the connector's output:
//
//	go test ./connector/tracemetrics -run TestGolden -update
//
// Review the diff before committing it: the files are what the connector must keep producing.
var update = flag.Bool("update", false, "rewrite testdata/golden/*/metrics.yaml from the connector's output")

// goldenCases are the directories of testdata/golden. spanmetrics: spanmetrics v0.165.1 gives
// the same data points for the case (start timestamps aside: README.md, "What differs"), so
// the expected file is checked against it too.
var goldenCases = []struct {
	name        string
	spanmetrics bool
}{
	{"default", true},
	{"dimensions", true},
	{"exponential", true},
	{"events", true},
	{"exemplars", true},
	{"delta", true},
	{"cardinality-limit", true},
	{"max-series-per-service", false}, // ours alone
}

// TestGolden feeds testdata/golden/traces.yaml to a connector configured by each case's
// config.yaml (over the defaults) twice, a flush after each, and compares the second flush
// with the case's metrics.yaml, timestamps included (the clock is a fake one).
func TestGolden(t *testing.T) {
	input, err := golden.ReadTraces(filepath.Join("testdata", "golden", "traces.yaml"))
	require.NoError(t, err)
	for _, gc := range goldenCases {
		t.Run(gc.name, func(t *testing.T) {
			dir := filepath.Join("testdata", "golden", gc.name)
			conf, err := confmaptest.LoadConf(filepath.Join(dir, "config.yaml"))
			require.NoError(t, err)
			raw := conf.ToStringMap()
			got := secondFlush(t, NewFactory(), raw, input)
			path := filepath.Join(dir, "metrics.yaml")
			if *update {
				require.NoError(t, golden.WriteMetricsToFile(path, got, golden.SkipMetricTimestampNormalization()))
			}
			want, err := golden.ReadMetrics(path)
			require.NoError(t, err)
			require.NoError(t, pmetrictest.CompareMetrics(want, got,
				pmetrictest.IgnoreResourceMetricsOrder(), pmetrictest.IgnoreMetricDataPointsOrder()))
			if gc.spanmetrics {
				stock := secondFlush(t, spanmetricsconnector.NewFactory(), raw, input)
				requireSamePoints(t, points(t, stock, false), points(t, want, false))
			}
		})
	}
}

// secondFlush returns what a connector of factory f configured by raw sends at its second
// flush, input consumed before each.
func secondFlush(t *testing.T, f connector.Factory, raw map[string]any, input ptrace.Traces) pmetric.Metrics {
	r := startConnector(t, f, raw)
	r.consume(input)
	r.flush()
	r.consume(input)
	return r.flush()
}
