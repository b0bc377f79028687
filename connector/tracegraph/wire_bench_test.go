package tracegraph

import (
	"context"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/otelcol-red/otelcol-red/internal/wiretraces"
)

// BenchmarkWirePath measures what a request costs from its bytes to the edges, one producer,
// the requests of BenchmarkConsumeTraces (~200 spans of generated call graphs each):
//
//   - wire: the otlpwire receiver's work after the transport (wiretraces.Wrap) and
//     ConsumeTraces of the wire traces: decode into the pooled decoder, reduce, pair;
//   - pdata: the stock otlp receiver's unmarshalling (ptraceotlp.ExportRequest.UnmarshalProto)
//     and ConsumeTraces of the pdata;
//   - floor: the unmarshalling alone.
//
// Reported per span: spans/s (wall), cpu-ns/span (the process's CPU time, the aggregator's
// included), allocs/request.
func BenchmarkWirePath(b *testing.B) {
	requests, spans := benchRequests(2000, 200)
	perRequest := float64(spans) / float64(len(requests))
	reqs := make([][]byte, len(requests))
	for i, td := range requests {
		var err error
		reqs[i], err = (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		require.NoError(b, err)
	}
	unmarshal := func(req []byte) ptrace.Traces {
		r := ptraceotlp.NewExportRequest()
		if err := r.UnmarshalProto(req); err != nil {
			panic(err)
		}
		return r.Traces()
	}
	for _, path := range []struct {
		name    string
		consume func(c *connectorImp, req []byte) error
	}{
		{"wire", func(c *connectorImp, req []byte) error {
			return c.ConsumeTraces(context.Background(), wiretraces.Wrap(req))
		}},
		{"pdata", func(c *connectorImp, req []byte) error {
			return c.ConsumeTraces(context.Background(), unmarshal(req))
		}},
		{"floor", func(_ *connectorImp, req []byte) error {
			_ = unmarshal(req)
			return nil
		}},
	} {
		b.Run(path.name, func(b *testing.B) {
			c, _ := benchConnector(b, "tracegraph")
			imp := c.(*connectorImp)
			for _, req := range reqs {
				require.NoError(b, path.consume(imp, req))
			}
			imp.settle()
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			start, cpuStart := time.Now(), processCPU()
			for i := range b.N {
				if err := path.consume(imp, reqs[i%len(reqs)]); err != nil {
					b.Fatal(err)
				}
			}
			imp.settle()
			elapsed, cpu := time.Since(start), processCPU()-cpuStart
			b.StopTimer()
			runtime.ReadMemStats(&after)
			n := float64(b.N) * perRequest
			b.ReportMetric(n/elapsed.Seconds(), "spans/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/span")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N), "allocs/request")
			require.NoError(b, c.Shutdown(context.Background()))
		})
	}
}

// processCPU returns the CPU time this process has used, user and system: unlike wall time it
// does not grow when other processes compete for the machine's cores.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
