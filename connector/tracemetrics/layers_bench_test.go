package tracemetrics

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
)

// layersInput returns traces shaped as the testbed's otlp-max scenarios send them:
// `services` services of 250 span names "op-0042" each, every name as a server and a client
// span, ok and error (4 series a name), one attribute (http.request.method), consecutive
// series in order, 1000 spans per Traces. The names are neither IDs nor routes: every layer
// runs and none reduces the series.
func layersInput(services int) []ptrace.Traces {
	const names, combos, batch = 250, 4, 1000
	nSeries := services * names * combos
	r := rand.New(rand.NewPCG(7, uint64(nSeries)))
	base := pcommon.NewTimestampFromTime(testStart.Add(-time.Minute))
	var out []ptrace.Traces
	for i := 0; i < nSeries; i += batch {
		td := ptrace.NewTraces()
		var spans ptrace.SpanSlice
		last := -1
		for s := i; s < min(i+batch, nSeries); s++ {
			combo, name, svc := s%combos, s/combos%names, s/combos/names
			if svc != last {
				rs := td.ResourceSpans().AppendEmpty()
				rs.Resource().Attributes().PutStr(series.ServiceNameKey, fmt.Sprintf("svc-%04d", svc))
				rs.Resource().Attributes().PutStr("service.instance.id", fmt.Sprintf("svc-%04d-0", svc))
				ss := rs.ScopeSpans().AppendEmpty()
				ss.Scope().SetName("otelcol-red/testbed")
				spans, last = ss.Spans(), svc
			}
			sp := spans.AppendEmpty()
			sp.SetName(fmt.Sprintf("op-%04d", name))
			sp.SetKind(ptrace.SpanKindServer)
			if combo%2 == 1 {
				sp.SetKind(ptrace.SpanKindClient)
			}
			sp.SetTraceID(pcommon.TraceID{byte(s), byte(s >> 8), byte(s >> 16), 1})
			sp.SetSpanID(pcommon.SpanID{byte(s), byte(s >> 8), byte(s >> 16), 2})
			start := base + pcommon.Timestamp(r.IntN(1e9))
			sp.SetStartTimestamp(start)
			sp.SetEndTimestamp(start + pcommon.Timestamp(r.ExpFloat64()*20e6))
			sp.Attributes().PutStr("http.request.method", "GET")
			if combo/2 == 1 {
				sp.Status().SetCode(ptrace.StatusCodeError)
			} else {
				sp.Status().SetCode(ptrace.StatusCodeOk)
			}
		}
		out = append(out, td)
	}
	for len(out) < 64 {
		out = append(out, out...)
	}
	return out
}

// layersVariants are configs/default.yaml's tracemetrics and configs/cardinality.yaml's (every
// layer on: the three span-name layers, both caps with selection by traffic, sampling
// weights), with the benchmarks' flush interval and series expiration.
func layersVariants() []struct {
	name string
	raw  map[string]any
} {
	base := func() map[string]any {
		return map[string]any{
			"metrics_flush_interval":  time.Hour,
			"series_expiration":       24 * time.Hour,
			"aggregation_temporality": "AGGREGATION_TEMPORALITY_DELTA",
		}
	}
	layers := base()
	layers["span_name"] = map[string]any{
		"from_semantic_conventions": true,
		"rules":                     []any{map[string]any{"match": `^tenant-[0-9a-z]+ (.*)$`, "replace": "$1"}},
		"clustering":                map[string]any{"enabled": true},
	}
	layers["max_series_per_service"] = 20000
	layers["max_series"] = 500000
	layers["cap_selection"] = map[string]any{"by": "traffic"}
	layers["sampling"] = map[string]any{"weighted": true}
	only := func(layer string, v any) map[string]any {
		raw := base()
		raw["span_name"] = map[string]any{layer: v}
		return raw
	}
	return []struct {
		name string
		raw  map[string]any
	}{
		{"default", base()},
		{"layers", layers},
		// One layer at a time, for where the cost goes (-bench 'BenchmarkLayers/.*/reduce').
		{"semconv", only("from_semantic_conventions", true)},
		{"rules", only("rules", layers["span_name"].(map[string]any)["rules"])},
		{"clustering", only("clustering", map[string]any{"enabled": true})},
	}
}

// BenchmarkLayers measures what every cardinality layer on costs against the default
// configuration, on the testbed's input, in the same run: the producer side alone
// (reduce: spans → deltaBatch, where the names are decided) and ConsumeTraces with
// aggregation (consume, 2 producers).
func BenchmarkLayers(b *testing.B) {
	for _, services := range []int{1, 100} {
		input := layersInput(services)
		nSeries := services * 1000
		for _, v := range layersVariants() {
			b.Run(fmt.Sprintf("series=%dk/reduce/%s", nSeries/1000, v.name), func(b *testing.B) {
				r := startConnector(b, NewFactory(), v.raw)
				red := r.conn.(*connectorImp).reducer
				learn, batch := learnAfter(r.conn.(*connectorImp)), new(series.Batch)
				// Until clustering has learned every name (LearnPerBatch a batch).
				for pass := 0; pass < 2 || r.conn.(*connectorImp).names.Clusterer() != nil && r.conn.(*connectorImp).names.Clusterer().Templates() < int64(services*250) && pass < 100; pass++ {
					for _, td := range input {
						red.Reduce(batch, td)
						learn(batch)
						series.Batches.Reset(batch)
					}
				}
				timeReduce(b, red, input, 1000, learn)
			})
		}
		for _, v := range layersVariants()[:2] {
			b.Run(fmt.Sprintf("series=%dk/consume/%s", nSeries/1000, v.name), func(b *testing.B) {
				b.ReportAllocs()
				r := startConnector(b, NewFactory(), v.raw)
				// Until clustering has learned every name: the steady state, as in the
				// binary a few seconds into a run.
				if clusters := r.conn.(*connectorImp).names.Clusterer(); clusters != nil {
					for range 100 {
						if clusters.Templates() >= int64(services*250) {
							break
						}
						consumeParallel(r.conn, input, 2, len(input))
						settleIfOurs(b, r.conn)
					}
				}
				measureConsume(b, r, input, 2)
			})
		}
	}
}
