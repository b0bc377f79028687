package tracemetrics

import (
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// samplingVariants are the tracestates BenchmarkSamplingWeights compares, in one run: none
// (the unweighted path), another vendor's entry only (parsed, weight 1), and an OpenTelemetry
// threshold (th:c, p = 1/4, the weighted path).
var samplingVariants = []struct{ name, traceState string }{
	{"tracestate=none", ""},
	{"tracestate=other", "vendor=abc,congo=t61rcWkgMzE"},
	{"tracestate=th", "vendor=abc,ot=th:c;rv:fe123456789abc"},
	{"tracestate=th+rv", "vendor=abc,ot=th:c;rv:fe1234567%05x"}, // rv differs per span: no memo hit
	{"tracestate=none/weighted=false", ""},                      // the code before weights: nothing read
}

func withTraceState(input []ptrace.Traces, ts string) []ptrace.Traces {
	out := make([]ptrace.Traces, len(input))
	for i, td := range input {
		out[i] = ptrace.NewTraces()
		td.CopyTo(out[i])
		forEachSpan(out[i], func(j int, ss ptrace.ScopeSpans, k int) {
			if strings.Contains(ts, "%") {
				ss.Spans().At(k).TraceState().FromRaw(fmt.Sprintf(ts, j))
			} else {
				ss.Spans().At(k).TraceState().FromRaw(ts)
			}
		})
	}
	return out
}

// BenchmarkSamplingWeights measures what weighting costs: the producer alone (reduce), and
// ConsumeTraces with aggregation (1 producer), with and without tracestates, in the same run.
func BenchmarkSamplingWeights(b *testing.B) {
	for _, nSeries := range []int{1_000, 100_000} {
		const batch = 1000
		base := benchInput(nSeries, batch)
		for _, v := range samplingVariants {
			input := withTraceState(base, v.traceState)
			b.Run(fmt.Sprintf("reduce/series=%dk/%s", nSeries/1000, v.name), func(b *testing.B) {
				r := startConnector(b, NewFactory(), variantConfig(v.name))
				timeReduce(b, r.conn.(*connectorImp).reducer, input, batch, nil)
			})
			b.Run(fmt.Sprintf("consume/series=%dk/%s", nSeries/1000, v.name), func(b *testing.B) {
				measureConsume(b, startConnector(b, NewFactory(), variantConfig(v.name)), input, 1)
			})
		}
	}
}

func variantConfig(name string) map[string]any {
	raw := configFor(NewFactory())
	if strings.HasSuffix(name, "weighted=false") {
		raw["sampling"] = map[string]any{"weighted": false}
	}
	return raw
}
