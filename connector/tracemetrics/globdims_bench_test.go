package tracemetrics

import (
	"fmt"
	"maps"
	"testing"
)

// globVariants are the dimension configurations BenchmarkGlobDimensions compares, in one run,
// on benchInput (spans with http.request.method, http.response.status_code, url.scheme and
// server.address; resources with service.namespace, host.name, telemetry.sdk.*):
//   - names: benchConfig's two named dimensions, the path without globs;
//   - glob, same attributes: one glob taking the same two attributes;
//   - globs, 5 attributes: three globs taking three span attributes and a resource
//     attribute, with a named resource dimension beside them.
var globVariants = []struct {
	name string
	dims []any
}{
	{"names", dims("http.request.method", "http.response.status_code")},
	{"glob/same-attributes", []any{globDim("http.*.*")}},
	{"globs/5-attributes", []any{dims("telemetry.sdk.language")[0], globDim("http.**"), globDim("server.*"), globDim("host.*")}},
}

// BenchmarkGlobDimensions measures what glob dimensions cost the producer (reduce) and
// ConsumeTraces with aggregation (1 producer), against named dimensions, in the same run.
func BenchmarkGlobDimensions(b *testing.B) {
	for _, nSeries := range []int{1_000, 100_000} {
		const batch = 1000
		input := benchInput(nSeries, batch)
		for _, v := range globVariants {
			raw := maps.Clone(configFor(NewFactory()))
			raw["dimensions"] = v.dims
			b.Run(fmt.Sprintf("reduce/series=%dk/%s", nSeries/1000, v.name), func(b *testing.B) {
				r := startConnector(b, NewFactory(), raw)
				timeReduce(b, r.conn.(*connectorImp).reducer, input, batch, nil)
			})
			b.Run(fmt.Sprintf("consume/series=%dk/%s", nSeries/1000, v.name), func(b *testing.B) {
				measureConsume(b, startConnector(b, NewFactory(), raw), input, 1)
			})
		}
	}
}
