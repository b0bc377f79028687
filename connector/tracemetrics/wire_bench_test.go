package tracemetrics

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/otelcol-red/otelcol-red/internal/wiretraces"
)

// BenchmarkWirePath measures what a request costs from its bytes to the series, one producer,
// 1000 spans per request, at ~670 and ~110k series (benchInput, the testbed's two sizes):
//
//   - wire: the otlpwire receiver's work after the transport (wiretraces.Wrap) and
//     ConsumeTraces of the wire traces: decode into the pooled decoder, reduce, aggregate;
//   - pdata: the stock otlp receiver's unmarshalling (ptraceotlp.ExportRequest.UnmarshalProto)
//     and ConsumeTraces of the pdata;
//   - floor: the unmarshalling alone, what any pipeline on pdata pays before a component runs;
//   - wire-consume: ConsumeTraces of wire traces wrapped beforehand, the connector's part of
//     wire alone: 0 allocs/op (-benchmem) in steady state.
//
// ns/span is wall time, cpu-ns/span the process's CPU time (the aggregator's included), both
// per span, after a warm-up in which every series is created.
func BenchmarkWirePath(b *testing.B) {
	for _, nSeries := range []int{670, 110_000} {
		input := benchInput(nSeries, 1000)
		reqs := make([][]byte, len(input))
		for i, td := range input {
			var err error
			reqs[i], err = (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
			require.NoError(b, err)
		}
		wrapped := make([]ptrace.Traces, len(reqs))
		for i, req := range reqs {
			wrapped[i] = wiretraces.Wrap(req)
		}
		spans := input[0].SpanCount()
		unmarshal := func(req []byte) ptrace.Traces {
			r := ptraceotlp.NewExportRequest()
			if err := r.UnmarshalProto(req); err != nil {
				panic(err)
			}
			return r.Traces()
		}
		for _, path := range []struct {
			name    string
			consume func(c consumer.Traces, i int) error
		}{
			{"wire", func(c consumer.Traces, i int) error {
				return c.ConsumeTraces(context.Background(), wiretraces.Wrap(reqs[i]))
			}},
			{"pdata", func(c consumer.Traces, i int) error {
				return c.ConsumeTraces(context.Background(), unmarshal(reqs[i]))
			}},
			{"floor", func(_ consumer.Traces, i int) error {
				_ = unmarshal(reqs[i])
				return nil
			}},
			{"wire-consume", func(c consumer.Traces, i int) error {
				return c.ConsumeTraces(context.Background(), wrapped[i])
			}},
		} {
			b.Run(fmt.Sprintf("series=%d/%s", nSeries, path.name), func(b *testing.B) {
				r := startConnector(b, NewFactory(), configFor(NewFactory()))
				c := r.conn.(*connectorImp)
				// Warm up as measureConsume does: every series exists, and as many batches
				// circulate as this load keeps in flight.
				for i := range max(len(reqs), 2048) {
					require.NoError(b, path.consume(c, i%len(reqs)))
				}
				c.settle(b)
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				b.ReportAllocs()
				b.ResetTimer()
				start, cpuStart := time.Now(), processCPU()
				for i := range b.N {
					if err := path.consume(c, i%len(reqs)); err != nil {
						b.Fatal(err)
					}
				}
				// Allocations up to the last call: settle queues empty batches of its own.
				runtime.ReadMemStats(&after)
				c.settle(b)
				elapsed, cpu := time.Since(start), processCPU()-cpuStart
				b.StopTimer()
				n := float64(b.N) * float64(spans)
				b.ReportMetric(float64(elapsed.Nanoseconds())/n, "ns/span")
				b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/span")
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N), "allocs/request")
			})
		}
	}
}
