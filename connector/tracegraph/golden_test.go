package tracegraph

import (
	"context"
	"flag"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-red/otelcol-red/connector/tracegraph/internal/metadata"
)

// update rewrites the expected metrics of the golden cases from the connector's output:
//
//	go test ./connector/tracegraph -run TestGolden -update
//
// Review the diff before committing it: the files are what the connector must keep producing.
// (That the output is servicegraph's is TestCompatibilityWithServicegraph's to show.)
var update = flag.Bool("update", false, "rewrite testdata/golden/*/metrics.yaml from the connector's output")

// TestGolden feeds testdata/golden/traces.yaml (calls paired within the request, a failed one,
// a database, a queue, an untraced peer, a root server span, a client span without a peer, an
// internal span, a resource without service.name, producers whose consumers link to them from
// other traces: a batch receive and a second consumer group) to a connector configured by each case's
// config.yaml over the defaults, shuts it down (the halves still waiting expire, into virtual
// nodes) and compares the final flush with the case's metrics.yaml, timestamps included (the
// clock is a fake one).
func TestGolden(t *testing.T) {
	input, err := golden.ReadTraces(filepath.Join("testdata", "golden", "traces.yaml"))
	require.NoError(t, err)
	for _, name := range []string{"default", "virtual-node-label", "dimensions", "exponential", "delta", "messaging", "no-links"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "golden", name)
			conf, err := confmaptest.LoadConf(filepath.Join(dir, "config.yaml"))
			require.NoError(t, err)
			cfg := createDefaultConfig().(*Config)
			require.NoError(t, conf.Unmarshal(cfg))
			require.NoError(t, cfg.Validate())
			set := connectortest.NewNopSettings(metadata.Type)
			set.Resource.Attributes().PutStr("service.instance.id", "gateway-1")
			sink := &consumertest.MetricsSink{}
			c, err := newConnector(set.TelemetrySettings, cfg, sink, clockwork.NewFakeClockAt(goldenNow))
			require.NoError(t, err)
			require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
			require.NoError(t, c.ConsumeTraces(context.Background(), input))
			require.NoError(t, c.Shutdown(context.Background()))
			got := pmetric.NewMetrics()
			for _, md := range sink.AllMetrics() {
				md.ResourceMetrics().MoveAndAppendTo(got.ResourceMetrics())
			}

			path := filepath.Join(dir, "metrics.yaml")
			if *update {
				require.NoError(t, golden.WriteMetricsToFile(path, got, golden.SkipMetricTimestampNormalization()))
			}
			want, err := golden.ReadMetrics(path)
			require.NoError(t, err)
			require.NoError(t, pmetrictest.CompareMetrics(want, got,
				pmetrictest.IgnoreResourceMetricsOrder(), pmetrictest.IgnoreMetricDataPointsOrder()))
		})
	}
}

// goldenNow is the fake clock's time: after every span of the input.
var goldenNow = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
