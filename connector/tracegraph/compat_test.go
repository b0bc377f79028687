package tracegraph

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/open-telemetry/opentelemetry-collector-contrib/connector/servicegraphconnector"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/featuregate"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracegraph/internal/metadata"
)

// compatTTL is both stores' ttl: long enough for every pair of a test's input to meet (it is
// sent within milliseconds, within hundreds under -race on a busy 2-core machine with the
// cases in parallel), short enough to wait for the unpaired halves to expire.
const compatTTL = 3 * time.Second

// TestCompatibilityWithServicegraph feeds identical traces to contrib's servicegraph v0.159.0
// (the newest release the module proxy serves, versions.txt) and to tracegraph, lets the
// unpaired halves expire in both, and requires the same data points: names, units, label sets,
// counts, sums and buckets, and timestamps that apply metrics_timestamp_offset alike. The traces are generated call
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
			sg.MetricsTimestampOffset, ours.MetricsTimestampOffset = time.Hour, time.Hour
		}},
		{name: "timestamp_offset", cfg: func(sg *servicegraphconnector.Config, ours *Config) {
			sg.MetricsTimestampOffset, ours.MetricsTimestampOffset = time.Hour, time.Hour
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
			requireSamePoints(t, want.md, got.md)

			wantStamps, gotStamps := want.stamps(sgCfg.MetricsTimestampOffset), got.stamps(ours.MetricsTimestampOffset)
			if sgCfg.ExponentialHistogramMaxSize > 0 && sgCfg.MetricsTimestampOffset > 0 {
				// servicegraph v0.159.0 stamps exponential request_server points with the
				// time of the flush, without the offset (v0.145.0 also left the client
				// points' timestamps at 0; v0.159.0 sets them, with the offset). tracegraph
				// applies the offset to every point (README, "What differs").
				require.Equal(t, stampUnshifted, wantStamps[metricServer], "servicegraph's exponential server points")
				wantStamps[metricServer] = stampShifted
			}
			require.Equal(t, wantStamps, gotStamps, "timestamps by metric")
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

// compatRun is a connector's last flush and the interval in which it was built.
type compatRun struct {
	md       pmetric.Metrics
	from, to time.Time
}

// How a metric's data points are stamped relative to the flush.
const (
	stampShifted   = "flush time - metrics_timestamp_offset"
	stampUnshifted = "flush time"
	stampZero      = "zero"
	stampOther     = "other"
	stampNoStart   = "no start timestamp"
)

// stamps classifies the timestamps of each metric's data points: shifted by offset from the
// flush's time, the flush's time itself, zero, or anything else (mixed classes read "other").
// With a zero offset, shifted and unshifted are the same and read as shifted.
func (r compatRun) stamps(offset time.Duration) map[string]string {
	out := map[string]string{}
	in := func(ts pcommon.Timestamp, shift time.Duration) bool {
		t := ts.AsTime()
		return !t.Before(r.from.Add(-shift)) && !t.After(r.to.Add(-shift))
	}
	classify := func(start, ts pcommon.Timestamp) string {
		switch {
		case start == 0:
			return stampNoStart
		case ts == 0:
			return stampZero
		case in(ts, offset):
			return stampShifted
		case in(ts, 0):
			return stampUnshifted
		}
		return stampOther
	}
	rms := r.md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				add := func(start, ts pcommon.Timestamp) {
					c := classify(start, ts)
					if prev, ok := out[m.Name()]; ok && prev != c {
						c = stampOther
					}
					out[m.Name()] = c
				}
				switch m.Type() {
				case pmetric.MetricTypeSum:
					for _, dp := range m.Sum().DataPoints().All() {
						add(dp.StartTimestamp(), dp.Timestamp())
					}
				case pmetric.MetricTypeHistogram:
					for _, dp := range m.Histogram().DataPoints().All() {
						add(dp.StartTimestamp(), dp.Timestamp())
					}
				case pmetric.MetricTypeExponentialHistogram:
					for _, dp := range m.ExponentialHistogram().DataPoints().All() {
						add(dp.StartTimestamp(), dp.Timestamp())
					}
				}
			}
		}
	}
	return out
}

// runServicegraph sends input to servicegraph, waits for its store to expire every unpaired
// half, and returns one flush of everything. servicegraph flushes on a ticker, or on every
// ConsumeTraces when metrics_flush_interval is 0, which it reads at each call from the
// configuration it keeps: flushing on every call while the input is sent would take longer
// than the ttl, so the interval is 0 only for the last, empty call.
func runServicegraph(t *testing.T, cfg *servicegraphconnector.Config, input []ptrace.Traces) compatRun {
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
func runTracegraph(t *testing.T, cfg *Config, input []ptrace.Traces) compatRun {
	require.NoError(t, cfg.Validate())
	f := NewFactory()
	sink := &consumertest.MetricsSink{}
	c, err := f.CreateTracesToMetrics(context.Background(), settings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	return runConnector(t, c, sink, input, func() {})
}

func runConnector(t *testing.T, c connector.Traces, sink *consumertest.MetricsSink, input []ptrace.Traces, beforeShutdown func()) compatRun {
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
	from := time.Now()
	beforeShutdown()
	require.NoError(t, c.Shutdown(context.Background()))
	to := time.Now()
	all := sink.AllMetrics()
	require.NotEmpty(t, all, "no flush")
	return compatRun{md: all[len(all)-1], from: from, to: to}
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
	requireSamePoints(t, want.md, got.md)
}

// TestConfigKeysMatchServicegraph requires every key servicegraph v0.159.0 reads to exist in
// tracegraph's Config at the same YAML path with the same Go type, servicegraph's defaults
// wherever ours are not documented as different (store.ttl and store.max_items, README "The
// store"), and the same values after loading the same blocks (testdata/config.yaml:
// tracegraph/servicegraph, contrib's README example with every key set, and
// tracegraph/exponential for the key exclusive with latency_histogram_buckets). A key added upstream,
// or a changed default, fails here.
func TestConfigKeysMatchServicegraph(t *testing.T) {
	sgKeys := yamlFields(reflect.TypeOf(servicegraphconnector.Config{}), "")
	ourKeys := yamlFields(reflect.TypeOf(Config{}), "")
	require.NotEmpty(t, sgKeys)
	for key, f := range sgKeys {
		ours, ok := ourKeys[key]
		if !assert.Truef(t, ok, "servicegraph key %s is missing", key) {
			continue
		}
		require.Equalf(t, f.typ, ours.typ, "type of %s", key)
	}

	sgDefault := servicegraphconnector.NewFactory().CreateDefaultConfig()
	ourDefault := createDefaultConfig()
	ourDifferent := map[string]bool{"store.ttl": true, "store.max_items": true}
	for key := range sgKeys {
		sg, ours := valueAt(sgDefault, key), valueAt(ourDefault, key)
		if ourDifferent[key] {
			require.NotEqualf(t, sg, ours, "default of %s: now servicegraph's, drop the difference", key)
			continue
		}
		require.Equalf(t, sg, ours, "default of %s", key)
	}

	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	set := map[string]bool{}
	for _, id := range []string{"tracegraph/servicegraph", "tracegraph/exponential"} {
		block, err := cm.Sub(id)
		require.NoError(t, err)
		sgCfg, ourCfg := servicegraphconnector.NewFactory().CreateDefaultConfig(), createDefaultConfig()
		require.NoError(t, block.Unmarshal(sgCfg), id)
		require.NoError(t, block.Unmarshal(ourCfg), id)
		require.NoError(t, confmap.Validate(sgCfg), id)
		require.NoError(t, confmap.Validate(ourCfg), id)
		for key := range sgKeys {
			if !block.IsSet(strings.ReplaceAll(key, ".", confmap.KeyDelimiter)) {
				continue // a default, compared above
			}
			set[key] = true
			require.Equalf(t, valueAt(sgCfg, key), valueAt(ourCfg, key), "%s: loaded %s", id, key)
		}
	}
	for key := range sgKeys {
		require.Truef(t, set[key], "no block of testdata/config.yaml sets %s", key)
	}
}

// yamlField is a leaf of a configuration struct: its Go type and its field index path.
type yamlField struct {
	typ   reflect.Type
	index []int
}

// yamlFields returns the leaves of struct type t by YAML path ("store.ttl"); nested structs
// other than time types are walked.
func yamlFields(t reflect.Type, prefix string) map[string]yamlField {
	out := map[string]yamlField{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if name == "" || name == "-" {
			continue
		}
		if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() != "time" {
			for k, sub := range yamlFields(f.Type, prefix+name+".") {
				out[k] = yamlField{typ: sub.typ, index: append([]int{i}, sub.index...)}
			}
			continue
		}
		out[prefix+name] = yamlField{typ: f.Type, index: []int{i}}
	}
	return out
}

// valueAt returns the value at YAML path key of cfg, a pointer to a configuration struct.
func valueAt(cfg any, key string) any {
	v := reflect.ValueOf(cfg).Elem()
	f, ok := yamlFields(v.Type(), "")[key]
	if !ok {
		panic("BUG: no key " + key)
	}
	return v.FieldByIndex(f.index).Interface()
}

// TestServicegraphGatesAreFixed checks what tracegraph relies on to no longer read
// servicegraph's feature gates: in v0.159.0 connector.servicegraph.virtualNode is stable and
// the two legacy gates are deprecated, so none of them can be switched from the behaviour
// tracegraph has (virtual nodes on, seconds, request_server and request_client). Were a gate
// switchable again, tracegraph would have to follow it.
func TestServicegraphGatesAreFixed(t *testing.T) {
	for id, fixed := range map[string]bool{
		"connector.servicegraph.virtualNode":              true,
		"connector.servicegraph.legacyLatencyMetricNames": false,
		"connector.servicegraph.legacyLatencyUnitMs":      false,
	} {
		var found bool
		featuregate.GlobalRegistry().VisitAll(func(g *featuregate.Gate) {
			if g.ID() == id {
				found = true
				require.Equal(t, fixed, g.IsEnabled(), id)
			}
		})
		require.True(t, found, "%s is registered by servicegraph", id)
		require.Error(t, featuregate.GlobalRegistry().Set(id, !fixed), "%s can be switched", id)
	}
}
