package otlpwirereceiver

import (
	"context"
	"net/http"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
)

// BenchmarkReceive compares, in the same run, the otlp receiver and this one receiving the
// same 1000-span request (10 resources of 100 spans, pdata's encoding) into a nop consumer,
// one request at a time over loopback: gRPC from a client that sends the encoded request as
// it is (so that the client costs both the same and little), and HTTP/protobuf from net/http.
// Besides Go's ns/op, B/op and allocs/op (the whole process: client, transport, receiver),
// it reports per span the wall time, the process's CPU time (user + system, which on a
// shared machine counts what the benchmark spent, not the waiting) and the allocations.
// The accepted-spans counter of each receiver must show every span at the end.
//
//	go test -run '^$' -bench BenchmarkReceive -benchmem -benchtime 2000x ./receiver/otlpwirereceiver/
func BenchmarkReceive(b *testing.B) {
	const resources, perResource = 10, 100
	req := marshal(b, genTraces(resources, perResource))
	const spans = resources * perResource

	receivers := []struct {
		name  string
		start func(testing.TB, consumer.Traces) started
	}{
		{"otlp", startStock},
		{"otlpwire", func(tb testing.TB, next consumer.Traces) started {
			cfg, ep := newConfig(tb)
			return startReceiver(tb, cfg, ep, next)
		}},
	}
	for _, transport := range []string{"grpc", "http"} {
		for _, rc := range receivers {
			b.Run(transport+"/"+rc.name, func(b *testing.B) {
				s := rc.start(b, consumertest.NewNop())
				send := func() {}
				switch transport {
				case "grpc":
					conn := dial(b, s.grpc)
					send = func() {
						if err := exportRaw(context.Background(), conn, req); err != nil {
							b.Fatal(err)
						}
					}
				case "http":
					send = func() {
						code, _, body := post(b, s.http, "application/x-protobuf", req, false)
						if code != http.StatusOK {
							b.Fatalf("HTTP %d: %s", code, body)
						}
					}
				}
				send() // connect before measuring

				b.ReportAllocs()
				b.SetBytes(int64(len(req)))
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				cpuBefore := processCPU()
				for b.Loop() {
					send()
				}
				cpu := processCPU() - cpuBefore
				runtime.ReadMemStats(&after)
				n := float64(b.N) * spans
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/span")
				b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/span")
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/span")
				require.Equal(b, int64(b.N+1)*spans, sumOf(b, s.tel, "otelcol_receiver_accepted_spans", "transport", transport))
			})
		}
	}
}
