package tracemetrics

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/reduce"
	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
	"github.com/otelcol-red/otelcol-red/internal/otlpwire/otlpwiretest"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces"
)

// wireEncodings are the ways a request reaches the wire path: pdata's marshaler (fields in
// descending order), ascending order (other producers), ascending with fields no OTLP message
// defines, each as the otlpwire receiver wraps it (ExportTraceServiceRequest) and as the
// otlpwire_encoding extension wraps a Kafka message (TracesData).
var wireEncodings = []struct {
	name string
	enc  func(t testing.TB, td ptrace.Traces) ptrace.Traces
}{
	{"pdata order", func(t testing.TB, td ptrace.Traces) ptrace.Traces {
		b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		require.NoError(t, err)
		return wiretraces.Wrap(b)
	}},
	{"ascending", func(_ testing.TB, td ptrace.Traces) ptrace.Traces {
		return wiretraces.WrapTracesData(otlpwiretest.Ascending(td))
	}},
	{"unknown fields", func(_ testing.TB, td ptrace.Traces) ptrace.Traces {
		return wiretraces.Wrap(otlpwiretest.AscendingWithUnknownFields(td))
	}},
}

// nestValues adds what genTraces does not make: nested maps and slices and bytes, on
// resources (part of the resource's identity), spans and events, some of them dimensions,
// and parent span IDs.
func nestValues(r *rand.Rand, td ptrace.Traces) {
	for _, rs := range td.ResourceSpans().All() {
		if r.IntN(2) == 0 {
			rs.Resource().Attributes().PutEmptyBytes("res.blob").FromRaw([]byte{0, byte(r.IntN(3))})
		}
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				if r.IntN(3) == 0 {
					sp.SetParentSpanID(pcommon.SpanID{byte(r.IntN(200)), 7})
				}
				switch r.IntN(4) {
				case 0:
					m := sp.Attributes().PutEmptyMap("payload")
					m.PutStr("k", fmt.Sprint("v", r.IntN(2)))
					l := m.PutEmptySlice("l")
					l.AppendEmpty().SetInt(int64(r.IntN(2)))
					l.AppendEmpty().SetEmptyMap().PutDouble("d", 0.5)
				case 1:
					sp.Attributes().PutEmptySlice("payload").AppendEmpty().SetBool(r.IntN(2) == 0)
				case 2:
					sp.Attributes().PutEmptyBytes("payload").FromRaw([]byte{byte(r.IntN(2))})
				}
				for _, ev := range sp.Events().All() {
					if r.IntN(2) == 0 {
						ev.Attributes().PutEmptyMap("exception.detail").PutInt("line", int64(r.IntN(3)))
					}
				}
			}
		}
	}
}

// wireConfigs are the configurations the wire path is compared under: every input of a series
// key (named dimensions from spans, events and resources, defaults, values of every type, glob
// dimensions, scope, span names, sampling weights and method, resource key attributes) and
// every output (explicit and exponential histograms, exemplars, events, delta and cumulative).
var wireConfigs = map[string]map[string]any{
	"dimensions": {
		"dimensions":                    dims("http.method", "http.status_code", "tenant=none", "ratio", "payload", "region", "res.blob"),
		"exemplars":                     map[string]any{"enabled": true},
		"include_instrumentation_scope": []any{"lib-0"},
		"events":                        map[string]any{"enabled": true, "dimensions": dims("exception.type", "exception.detail")},
	},
	"globs exponential delta": {
		"aggregation_temporality": "AGGREGATION_TEMPORALITY_DELTA",
		"dimensions":              []any{dims("http.method")[0], globDim("k8s.*.name"), globDim("db.**"), globDim("payload")},
		"events":                  map[string]any{"enabled": true, "dimensions": []any{globDim("exception.*"), globDim("k8s.*.name")}},
		"histogram":               map[string]any{"exponential": map[string]any{"max_size": 40}},
		"exemplars":               map[string]any{"enabled": true},
	},
	"tempo keys": tempoKeysConfig,
	"sampling and names": {
		"dimensions":                      dims("http.method", "tenant"),
		"enable_metrics_sampling_method":  true,
		"sampling":                        map[string]any{"attribute": "sampling.probability"},
		"resource_metrics_key_attributes": []any{"service.name", "host.name", "res.blob"},
		"span_name": map[string]any{"from_semantic_conventions": true, "rules": []any{
			map[string]any{"service": "svc-1", "match": `^op-(\d)$`, "replace": "operation $1"},
		}},
	},
}

// The wire path counts what the pdata path counts: for the same requests, reduced from the
// decoder in any field order or unmarshalled by pdata, the flushed metrics are identical,
// data point for data point, exemplars and start times included, and so are the spans the
// telemetry counted.
func TestWireSameMetrics(t *testing.T) {
	for name, raw := range wireConfigs {
		t.Run(name, func(t *testing.T) {
			viaPdata := startConnector(t, NewFactory(), raw)
			viaWire := startConnector(t, NewFactory(), raw)
			rnd := newRand(21)
			calls := 0
			for range 3 {
				for range 6 {
					td := genTraces(rnd, 150, genOptions{services: 4, names: 5, bad: true, mixed: true,
						events: true, globs: true, sampled: true})
					nestValues(rnd, td)
					for _, sp := range spansOf(td) {
						if rnd.IntN(5) == 0 {
							sp.Attributes().PutDouble("sampling.probability", 0.25)
						}
						if rnd.IntN(4) == 0 {
							sp.Status().SetMessage(fmt.Sprint("timeout after ", rnd.IntN(3), "s"))
						}
					}
					wire := wireEncodings[calls%len(wireEncodings)].enc(t, td)
					calls++
					viaPdata.consume(td)
					viaWire.consume(wire)
				}
				want := points(t, settledFlush(t, viaPdata), true)
				got := points(t, settledFlush(t, viaWire), true)
				require.NotEmpty(t, want)
				require.Equal(t, want, got)
			}
			p, w := viaPdata.conn.(*connectorImp), viaWire.conn.(*connectorImp)
			require.Equal(t, p.tel.InvalidWeights.Load(), w.tel.InvalidWeights.Load())
			require.Equal(t, p.tel.FilteredSpans.Load(), w.tel.FilteredSpans.Load())
			require.Equal(t, p.tel.AggregatedSpans.Load(), w.tel.AggregatedSpans.Load())
			if _, ok := raw["filter_policies"]; ok {
				require.Positive(t, p.tel.FilteredSpans.Load())
			}
			if p.names != nil {
				require.Equal(t, p.names.Renamed(reduce.RenamedBySemconv), w.names.Renamed(reduce.RenamedBySemconv))
				require.Equal(t, p.names.Renamed(reduce.RenamedByRule), w.names.Renamed(reduce.RenamedByRule))
			}
		})
	}
}

// tempoKeysConfig uses every key of Grafana Tempo's that the connector accepts.
var tempoKeysConfig = map[string]any{
	// Grafana Tempo's keys: filter_policies (every kind of condition), dimension_mappings,
	// intrinsic_dimensions with status_message, span_multiplier_key, and
	// target_info_excluded_dimensions.
	"dimensions": dims("http.method"),
	"filter_policies": []any{
		map[string]any{"exclude": map[string]any{"match_type": "strict", "attributes": []any{
			map[string]any{"key": "kind", "value": "SPAN_KIND_INTERNAL"},
		}}},
		map[string]any{"exclude": map[string]any{"match_type": "regex", "attributes": []any{
			map[string]any{"key": "name", "value": "^op-4$"}, map[string]any{"key": "resource.service.name", "value": "svc-[12]"},
		}}},
		map[string]any{"include": map[string]any{"match_type": "regex", "attributes": []any{
			map[string]any{"key": "status", "value": "STATUS_CODE_(OK|UNSET|ERROR)"},
		}}},
		map[string]any{"include_any": map[string]any{"match_type": "strict", "attributes": []any{
			map[string]any{"key": "span.http.method", "value": "POST"},
		}}},
	},
	"dimension_mappings": []any{
		map[string]any{"name": "route", "source_labels": []any{"http.method", "http.status_code", "region", "ratio"}, "join": " "},
	},
	"intrinsic_dimensions":            map[string]any{"status_message": true, "span_kind": false},
	"span_multiplier_key":             "sampling.probability",
	"target_info_excluded_dimensions": []any{"host.name"},
	"exemplars":                       map[string]any{"enabled": true},
	"events":                          map[string]any{"enabled": true, "dimensions": dims("exception.type")},
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
	r := startConnector(t, NewFactory(), map[string]any{})
	td := genTraces(newRand(5), 20, genOptions{services: 2, names: 2})
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	err = r.conn.ConsumeTraces(context.Background(), wiretraces.Wrap(b[:len(b)-1]))
	require.Error(t, err)
	c := r.conn.(*connectorImp)
	require.EqualValues(t, 1, c.tel.RefusedRequests[otlpwire.RefusedMalformed].Load())
	require.Zero(t, c.tel.RefusedSpans.Load())
	require.Empty(t, points(t, settledFlush(t, r), false))
}

// FuzzWireSameMetrics: for any request bytes, the connector fed them as wire traces flushes
// the metrics it flushes when fed the pdata the OTLP receiver makes of them, or both refuse
// them. `go test` runs the seeds (genTraces requests in every encoding, and a few broken
// ones); `go test -fuzz FuzzWireSameMetrics` explores.
func FuzzWireSameMetrics(f *testing.F) {
	rnd := newRand(77)
	for i := range 6 {
		td := genTraces(rnd, 30, genOptions{services: 2, names: 3, bad: true, mixed: true, events: true, globs: true, sampled: true})
		nestValues(rnd, td)
		b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		require.NoError(f, err)
		f.Add(b)
		f.Add(otlpwiretest.Ascending(td))
		f.Add(otlpwiretest.AscendingWithUnknownFields(td))
		f.Add(b[:len(b)/(i+2)])
	}
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x02, 0x0a, 0x00})
	raw := wireConfigs["globs exponential delta"]
	f.Fuzz(func(t *testing.T, b []byte) {
		req := ptraceotlp.NewExportRequest()
		pdataErr := req.UnmarshalProto(b)
		viaWire := startConnector(t, NewFactory(), raw)
		wireErr := viaWire.conn.ConsumeTraces(context.Background(), wiretraces.Wrap(b))
		if pdataErr != nil || wireErr != nil {
			require.Error(t, pdataErr, "pdata refuses what the wire accepts")
			require.Error(t, wireErr, "the wire refuses what pdata accepts")
			return
		}
		viaPdata := startConnector(t, NewFactory(), raw)
		viaPdata.consume(req.Traces())
		require.Equal(t, points(t, settledFlush(t, viaPdata), true), points(t, settledFlush(t, viaWire), true))
	})
}
