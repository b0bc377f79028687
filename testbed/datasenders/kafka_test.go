package datasenders

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSpanShapeTraces(t *testing.T) {
	shape := SpanShape{Services: 3, SpanNames: 2, ErrorEvery: 4, RunID: 7}
	td := shape.Traces(10, 12)
	require.Equal(t, 12, td.SpanCount())
	require.Equal(t, 3, td.ResourceSpans().Len(), "one ResourceSpans per service")

	seen := map[uint64]bool{}
	for _, rs := range td.ResourceSpans().All() {
		svc, _ := rs.Resource().Attributes().Get("service.name")
		for _, sp := range rs.ScopeSpans().At(0).Spans().All() {
			tid := sp.TraceID()
			sid := sp.SpanID()
			assert.Equal(t, uint64(7), binary.BigEndian.Uint64(tid[:8]))
			i := binary.BigEndian.Uint64(tid[8:]) - 1
			assert.Equal(t, i+1, binary.BigEndian.Uint64(sid[:]))
			assert.Equal(t, shape.Service(int64(i)), svc.AsString())
			assert.Equal(t, shape.IsError(int64(i)), sp.Status().Code() == ptrace.StatusCodeError)
			seen[i] = true
		}
	}
	for i := uint64(10); i < 22; i++ {
		assert.True(t, seen[i], "span %d missing", i)
	}
	assert.Equal(t, map[string]int64{
		// spans 10..21: service i%3, error where i%4 == 3 (11 on svc-2, 15 on svc-0, 19 on svc-1)
		"svc-0/unset": 3, "svc-0/error": 1, "svc-1/unset": 3, "svc-1/error": 1, "svc-2/unset": 3, "svc-2/error": 1,
	}, countByServiceStatus(td))
}

func TestSpanShapeDefaults(t *testing.T) {
	var shape SpanShape
	names := map[string]bool{}
	services := map[string]bool{}
	td := shape.Traces(0, 1000)
	for _, rs := range td.ResourceSpans().All() {
		svc, _ := rs.Resource().Attributes().Get("service.name")
		services[svc.AsString()] = true
		for _, sp := range rs.ScopeSpans().At(0).Spans().All() {
			names[sp.Name()] = true
			assert.NotEqual(t, ptrace.StatusCodeError, sp.Status().Code())
		}
	}
	assert.Len(t, services, 10)
	assert.Len(t, names, 10)
}

func TestNewKafkaProducerRejectsNonLoopback(t *testing.T) {
	for _, b := range []string{"10.0.0.1:9092", "example.com:9092", "127.0.0.1"} {
		_, err := NewKafkaProducer([]string{b}, "t")
		assert.Error(t, err, b)
	}
	_, err := NewKafkaProducer(nil, "t")
	assert.Error(t, err)
	_, err = NewKafkaProducer([]string{"127.0.0.1:1"}, "")
	assert.Error(t, err)

	p, err := NewKafkaProducer([]string{"localhost:1", "[::1]:1"}, "t")
	require.NoError(t, err)
	p.Close()
}

func TestRunKafkaLoadNeedsDuration(t *testing.T) {
	_, err := RunKafkaLoad(t.Context(), KafkaLoad{Brokers: []string{"127.0.0.1:1"}, Topic: "t"})
	assert.Error(t, err)
}

// BenchmarkSpanShapeTraces is the generator's cost per span, which a load run spends on the
// same machine as the collector under test.
func BenchmarkSpanShapeTraces(b *testing.B) {
	shape := SpanShape{Services: 100, SpanNames: 1000, ErrorEvery: 10}
	var m ptrace.ProtoMarshaler
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		td := shape.Traces(int64(i)*100, 100)
		if _, err := m.MarshalTraces(td); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/span")
}
