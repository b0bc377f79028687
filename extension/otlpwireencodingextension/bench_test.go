package otlpwireencodingextension

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// BenchmarkUnmarshal compares, on one 1000-span message (10 resources of 100 spans, pdata's
// encoding) in the same run, the Kafka receiver's otlp_proto encoding (ptrace.ProtoUnmarshaler)
// and this extension: what the Kafka receiver spends per message before the pipeline.
//
//	go test -run '^$' -bench BenchmarkUnmarshal -benchmem ./extension/otlpwireencodingextension/
func BenchmarkUnmarshal(b *testing.B) {
	msg := message(b, 10, 100)
	const spans = 1000
	u, _ := newTestEncoding(b, defaultConfig())
	for _, bc := range []struct {
		name string
		u    ptrace.Unmarshaler
	}{
		{"otlp_proto", &ptrace.ProtoUnmarshaler{}},
		{"otlpwire_encoding", u},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				if _, err := bc.u.UnmarshalTraces(msg); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spans), "ns/span")
		})
	}
}
