package tracegraph

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/open-telemetry/opentelemetry-collector-contrib/connector/servicegraphconnector"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracegraph/internal/metadata"
)

// compatTTL is both stores' ttl: long enough for every pair of a test's input to meet (it is
// sent within milliseconds, within hundreds under -race on a busy 2-core machine with the
// cases in parallel), short enough to wait for the unpaired halves to expire.
const compatTTL = 3 * time.Second

// TestCompatibilityWithServicegraph feeds identical traces to contrib's servicegraph v0.145.0
// and to tracegraph, lets the unpaired halves expire in both, and requires the same data
// points: names, units, label sets, counts, sums and buckets. The traces are generated call
// graphs (callGraph): services calling services, databases named and unnamed, a queue, untraced
// peers and clients, failures, root server spans, resources without service.name; every span
// of a call is exported by its own service, the exports shuffled, so the halves of a call
// arrive in separate ConsumeTraces calls in either order.
func TestCompatibilityWithServicegraph(t *testing.T) {
	cases := []struct {
		name string
		cfg  func(sg *servicegraphconnector.Config, ours *Config)
	}{
		{name: "defaults"},
		{name: "buckets_dimensions_label", cfg: func(sg *servicegraphconnector.Config, ours *Config) {
			b := []time.Duration{5 * time.Millisecond, 50 * time.Millisecond, 500 * time.Millisecond}
			dims := []string{"http.method", "region", "http.status_code"}
			sg.LatencyHistogramBuckets, ours.LatencyHistogramBuckets = b, b
			sg.Dimensions, ours.Dimensions = dims, dims
			sg.VirtualNodeExtraLabel, ours.VirtualNodeExtraLabel = true, true
			peers := []string{"db.system", "peer.service"}
			sg.VirtualNodePeerAttributes, ours.VirtualNodePeerAttributes = peers, peers
		}},
		{name: "exponential", cfg: func(sg *servicegraphconnector.Config, ours *Config) {
			sg.ExponentialHistogramMaxSize, ours.ExponentialHistogramMaxSize = 20, 20
		}},
		{name: "no_virtual_nodes", cfg: func(sg *servicegraphconnector.Config, ours *Config) {
			sg.VirtualNodePeerAttributes, ours.VirtualNodePeerAttributes = []string{}, []string{}
			sg.DatabaseNameAttributes, ours.DatabaseNameAttributes = []string{"db.system"}, []string{"db.system"}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sgCfg, ours := compatConfigs()
			if tc.cfg != nil {
				tc.cfg(sgCfg, ours)
			}
			input := newCallGraph(42).traces(300)
			want := runServicegraph(t, sgCfg, input)
			got := runTracegraph(t, ours, input)
			requireSamePoints(t, want, got)
		})
	}
}

// compatConfigs returns both connectors' configurations with the same store: room for every
// half, compatTTL, expirations checked often.
func compatConfigs() (*servicegraphconnector.Config, *Config) {
	sg := servicegraphconnector.NewFactory().CreateDefaultConfig().(*servicegraphconnector.Config)
	sg.Store.TTL, sg.Store.MaxItems = compatTTL, 100_000
	sg.StoreExpirationLoop = 20 * time.Millisecond
	sg.MetricsFlushInterval = ptr(time.Hour) // see runServicegraph

	ours := createDefaultConfig().(*Config)
	ours.Store.TTL, ours.Store.MaxItems = compatTTL, 100_000
	ours.StoreExpirationLoop = 20 * time.Millisecond
	ours.MetricsFlushInterval = ptr(time.Hour) // Shutdown's final flush is the one compared
	return sg, ours
}

// runServicegraph sends input to servicegraph, waits for its store to expire every unpaired
// half, and returns one flush of everything. servicegraph flushes on a ticker, or on every
// ConsumeTraces when metrics_flush_interval is 0, which it reads at each call from the
// configuration it keeps: flushing on every call while the input is sent would take longer
// than the ttl, so the interval is 0 only for the last, empty call.
func runServicegraph(t *testing.T, cfg *servicegraphconnector.Config, input []ptrace.Traces) pmetric.Metrics {
	f := servicegraphconnector.NewFactory()
	sink := &consumertest.MetricsSink{}
	c, err := f.CreateTracesToMetrics(context.Background(), settings(f.Type()), cfg, sink)
	require.NoError(t, err)
	return runConnector(t, c, sink, input, func() {
		*cfg.MetricsFlushInterval = 0
		require.NoError(t, c.ConsumeTraces(context.Background(), ptrace.NewTraces()))
	})
}

// runTracegraph sends input to tracegraph, waits as long, and returns its final flush.
func runTracegraph(t *testing.T, cfg *Config, input []ptrace.Traces) pmetric.Metrics {
	require.NoError(t, cfg.Validate())
	f := NewFactory()
	sink := &consumertest.MetricsSink{}
	c, err := f.CreateTracesToMetrics(context.Background(), settings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	return runConnector(t, c, sink, input, func() {})
}

func runConnector(t *testing.T, c connector.Traces, sink *consumertest.MetricsSink, input []ptrace.Traces, beforeShutdown func()) pmetric.Metrics {
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	began := time.Now()
	for _, td := range input {
		require.NoError(t, c.ConsumeTraces(context.Background(), td))
	}
	// Pairs must meet before their ttl; on a machine too slow for that the comparison would
	// fail for the wrong reason.
	require.Less(t, time.Since(began), compatTTL/2, "sending took too long for the ttl")
	// Let every unpaired half pass its ttl and an expiration loop pass after it.
	time.Sleep(compatTTL + 300*time.Millisecond)
	beforeShutdown()
	require.NoError(t, c.Shutdown(context.Background()))
	all := sink.AllMetrics()
	require.NotEmpty(t, all, "no flush")
	return all[len(all)-1]
}

func settings(typ component.Type) connector.Settings {
	return connectortest.NewNopSettings(typ)
}

func requireSamePoints(t *testing.T, want, got pmetric.Metrics) {
	t.Helper()
	w, g := flatten(want), flatten(got)
	require.Equal(t, sortedKeys(w), sortedKeys(g), "the same series")
	for _, k := range sortedKeys(w) {
		wp, gp := w[k], g[k]
		require.InDelta(t, wp.Sum, gp.Sum, 1e-9*max(1, wp.Sum), k)
		require.InDelta(t, wp.Min, gp.Min, 1e-12, k)
		require.InDelta(t, wp.Max, gp.Max, 1e-12, k)
		wp.Sum, gp.Sum, wp.Min, gp.Min, wp.Max, gp.Max = 0, 0, 0, 0, 0, 0
		require.Equal(t, wp, gp, k)
	}
	// The input must have exercised what the test claims to compare.
	var total, failed, virtual, database, messaging int
	for k, p := range w {
		switch {
		case strings.HasPrefix(k, metricTotal+"{"):
			total++
			if strings.Contains(k, "connection_type=virtual_node") {
				virtual++
			}
			if strings.Contains(k, "connection_type=database") {
				database++
			}
			if strings.Contains(k, "connection_type=messaging_system") {
				messaging++
			}
		case strings.HasPrefix(k, metricFailed+"{"):
			failed += int(p.Int)
		}
	}
	require.Positive(t, total)
	require.Positive(t, failed)
	require.Positive(t, database)
	require.Positive(t, messaging)
	t.Logf("%d series, %d failed requests, %d virtual, %d database, %d messaging series", total, failed, virtual, database, messaging)
}

// TestHashCollisionsAreExact runs tracegraph on the same input with a hash that puts every
// pair key and every series key in one bucket: keys are compared, so nothing merges and the
// output is the same.
func TestHashCollisionsAreExact(t *testing.T) {
	_, cfg := compatConfigs()
	cfg.Dimensions = []string{"http.method", "region"}
	input := newCallGraph(9).traces(150)
	want := runTracegraph(t, cfg, input)

	sink := &consumertest.MetricsSink{}
	c, err := newConnector(settings(metadata.Type).TelemetrySettings, cfg, sink, clockwork.NewRealClock())
	require.NoError(t, err)
	collide := func([]byte) uint64 { return 42 }
	c.agg.pairs.keyHash, c.agg.series.keyHash = collide, collide
	got := runConnector(t, c, sink, input, func() {})
	requireSamePoints(t, want, got)
}
