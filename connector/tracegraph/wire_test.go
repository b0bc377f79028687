package tracegraph

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
	"github.com/otelcol-red/otelcol-red/internal/otlpwire/otlpwiretest"
	"github.com/otelcol-red/otelcol-red/internal/spanfilter"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces"
)

// wireEncodings are the ways a request reaches the wire path: pdata's marshaler (fields in
// descending order), ascending order (other producers), ascending with fields no OTLP message
// defines; as the otlpwire receiver wraps a request and as the otlpwire_encoding extension
// wraps a Kafka message.
var wireEncodings = []func(t testing.TB, td ptrace.Traces) ptrace.Traces{
	func(t testing.TB, td ptrace.Traces) ptrace.Traces {
		b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		require.NoError(t, err)
		return wiretraces.Wrap(b)
	},
	func(_ testing.TB, td ptrace.Traces) ptrace.Traces {
		return wiretraces.WrapTracesData(otlpwiretest.Ascending(td))
	},
	func(_ testing.TB, td ptrace.Traces) ptrace.Traces {
		return wiretraces.Wrap(otlpwiretest.AscendingWithUnknownFields(td))
	},
}

// wireTraceStates are sampled and unsampled tracestates, valid and not.
var wireTraceStates = []string{"", "", "ot=th:8", "vendor=a, ot=th:c", "ot=th:zz", "ot=th:0"}

// enrich adds what callGraph does not make: tracestates, dimension values of other types
// (doubles, bools, bytes, nested maps and slices, as dimensions and as peer and database
// names), on spans and resources.
func enrich(r *rand.Rand, td ptrace.Traces) {
	for _, rs := range td.ResourceSpans().All() {
		if r.IntN(3) == 0 {
			rs.Resource().Attributes().PutEmptyMap("payload").PutInt("shard", int64(r.IntN(2)))
		}
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				sp.TraceState().FromRaw(wireTraceStates[r.IntN(len(wireTraceStates))])
				a := sp.Attributes()
				switch r.IntN(6) {
				case 0:
					a.PutDouble("payload", []float64{0.5, 1e21, 1e-7}[r.IntN(3)])
				case 1:
					s := a.PutEmptySlice("payload")
					s.AppendEmpty().SetBool(true)
					s.AppendEmpty().SetEmptyMap().PutStr("k", "v")
				case 2:
					a.PutEmptyBytes("payload").FromRaw([]byte{1, byte(r.IntN(2))})
				}
				if sp.Kind() == ptrace.SpanKindClient && r.IntN(8) == 0 {
					a.PutInt("peer.service", int64(r.IntN(2)))
				}
			}
		}
	}
}

// wireConfig is the configuration the paths are compared under: dimensions of every type, from
// spans and resources, and sampling weights; a ttl no test outlasts, so that what pairs
// depends on the input alone.
func wireConfig(cfg *Config) {
	cfg.Dimensions = []string{"http.method", "region", "http.status_code", "payload"}
	cfg.Store.TTL = time.Hour
	cfg.Store.MaxItems = 100_000
	cfg.Sampling.Weighted = true
}

// tempoConfig is wireConfig with Grafana Tempo's service-graph keys: filter_policies with
// every kind of condition, and span_multiplier_key.
func tempoConfig(cfg *Config) {
	wireConfig(cfg)
	cfg.SpanMultiplierKey = "sample.ratio"
	cfg.FilterPolicies = []spanfilter.Policy{
		{Exclude: &spanfilter.Match{MatchType: spanfilter.Strict, Attributes: []spanfilter.Attribute{
			{Key: "resource.service.name", Value: "shipping"}, {Key: "kind", Value: "SPAN_KIND_SERVER"},
		}}},
		{Exclude: &spanfilter.Match{MatchType: spanfilter.Regex, Attributes: []spanfilter.Attribute{
			{Key: "span.http.method", Value: "^POST$"}, {Key: "status", Value: "ERROR"},
		}}},
		{Include: &spanfilter.Match{MatchType: spanfilter.Regex, Attributes: []spanfilter.Attribute{
			{Key: "kind", Value: "SPAN_KIND_(SERVER|CONSUMER|CLIENT|PRODUCER)"}, {Key: "name", Value: "."},
		}}},
		{IncludeAny: &spanfilter.Match{MatchType: spanfilter.Strict, Attributes: []spanfilter.Attribute{
			{Key: "span.http.status_code", Value: 500},
		}}},
	}
}

// The wire path counts what the pdata path counts: for the same requests, reduced from the
// decoder in any field order or unmarshalled by pdata, the flushed edges are identical, data
// point for data point, and so are the spans the telemetry counted; with Tempo's keys too.
func TestWireSameMetrics(t *testing.T) {
	t.Run("servicegraph keys", func(t *testing.T) { testWireSameMetrics(t, wireConfig) })
	t.Run("tempo keys", func(t *testing.T) { testWireSameMetrics(t, tempoConfig) })
}

func testWireSameMetrics(t *testing.T, config func(*Config)) {
	viaPdata, pdataSink := startTracegraph(t, config)
	viaWire, wireSink := startTracegraph(t, config)
	rnd := rand.New(rand.NewPCG(9, 10))
	for i, td := range newCallGraph(31).traces(400) {
		enrich(rnd, td)
		if i%7 == 0 {
			// A sampling ratio on some resources (span_multiplier_key reads the resource too).
			td.ResourceSpans().At(0).Resource().Attributes().PutDouble("sample.ratio", 0.5)
		}
		for _, sp := range spansOf(td) {
			if rnd.IntN(6) == 0 {
				sp.Attributes().PutDouble("sample.ratio", []float64{0.25, 0, 2}[rnd.IntN(3)])
			}
		}
		wire := wireEncodings[i%len(wireEncodings)](t, td)
		consume(t, viaPdata, td)
		consume(t, viaWire, wire)
	}
	require.NoError(t, viaPdata.Shutdown(context.Background()))
	require.NoError(t, viaWire.Shutdown(context.Background()))
	want, got := flatten(lastFlush(t, pdataSink)), flatten(lastFlush(t, wireSink))
	require.NotEmpty(t, want)
	require.Equal(t, want, got)
	require.Positive(t, viaPdata.tel.invalidWeights.Load())
	for name, counts := range map[string][2]int64{
		"received":        {viaPdata.tel.receivedSpans.Load(), viaWire.tel.receivedSpans.Load()},
		"without service": {viaPdata.tel.noService.Load(), viaWire.tel.noService.Load()},
		"invalid weights": {viaPdata.tel.invalidWeights.Load(), viaWire.tel.invalidWeights.Load()},
		"total edges":     {viaPdata.tel.totalEdges.Load(), viaWire.tel.totalEdges.Load()},
		"filtered":        {viaPdata.tel.filteredSpans.Load(), viaWire.tel.filteredSpans.Load()},
	} {
		require.Equal(t, counts[0], counts[1], name)
	}
	cfg := createDefaultConfig().(*Config)
	config(cfg)
	if cfg.FilterPolicies != nil {
		require.Positive(t, viaPdata.tel.filteredSpans.Load())
	}
}

func spansOf(td ptrace.Traces) []ptrace.Span {
	var out []ptrace.Span
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				out = append(out, sp)
			}
		}
	}
	return out
}

// Wire traces whose request the decoder refuses are refused whole, counted by reason, and
// count nothing.
func TestWireRefusedRequest(t *testing.T) {
	c, _ := startTracegraph(t, nil)
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(oneSpan("a", ptrace.SpanKindClient, 1, 1, 0, nil))
	require.NoError(t, err)
	require.Error(t, c.ConsumeTraces(context.Background(), wiretraces.Wrap(b[:len(b)-1])))
	require.EqualValues(t, 1, c.tel.refusedRequests[otlpwire.RefusedMalformed].Load())
	require.NoError(t, c.Shutdown(context.Background()))
	require.Zero(t, c.tel.receivedSpans.Load())
}

// FuzzWireSameMetrics: for any request bytes, the connector fed them as wire traces flushes
// the edges it flushes when fed the pdata the OTLP receiver makes of them, or both refuse
// them. `go test` runs the seeds; `go test -fuzz FuzzWireSameMetrics` explores.
func FuzzWireSameMetrics(f *testing.F) {
	rnd := rand.New(rand.NewPCG(3, 4))
	g := newCallGraph(5)
	exports := g.traces(4)
	for i, td := range exports[:min(8, len(exports))] {
		merged := ptrace.NewTraces()
		td.ResourceSpans().MoveAndAppendTo(merged.ResourceSpans())
		enrich(rnd, merged)
		b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(merged)
		require.NoError(f, err)
		f.Add(b)
		f.Add(otlpwiretest.Ascending(merged))
		f.Add(otlpwiretest.AscendingWithUnknownFields(merged))
		f.Add(b[:len(b)/(i+2)])
	}
	// A client and its server in one request: a paired edge.
	pair := oneSpan("a", ptrace.SpanKindClient, 1, 1, 0, func(s ptrace.Span) { s.Attributes().PutStr("http.method", "GET") })
	oneSpan("b", ptrace.SpanKindServer, 1, 2, 1, func(s ptrace.Span) { s.SetParentSpanID(pcommon.SpanID{1}) }).
		ResourceSpans().MoveAndAppendTo(pair.ResourceSpans())
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(pair)
	require.NoError(f, err)
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		req := ptraceotlp.NewExportRequest()
		pdataErr := req.UnmarshalProto(b)
		viaWire, wireSink := startTracegraph(t, wireConfig)
		wireErr := viaWire.ConsumeTraces(context.Background(), wiretraces.Wrap(b))
		if pdataErr != nil || wireErr != nil {
			require.Error(t, pdataErr, "pdata refuses what the wire accepts")
			require.Error(t, wireErr, "the wire refuses what pdata accepts")
			return
		}
		viaPdata, pdataSink := startTracegraph(t, wireConfig)
		consume(t, viaPdata, req.Traces())
		require.NoError(t, viaPdata.Shutdown(context.Background()))
		require.NoError(t, viaWire.Shutdown(context.Background()))
		require.Equal(t, flushedPoints(pdataSink), flushedPoints(wireSink))
	})
}

// flushedPoints returns the data points of a connector's last flush; none without a flush
// (no edge to flush).
func flushedPoints(sink *consumertest.MetricsSink) map[string]point {
	all := sink.AllMetrics()
	if len(all) == 0 {
		return map[string]point{}
	}
	return flatten(all[len(all)-1])
}
