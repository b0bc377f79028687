package harness

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

func TestShapeSeries(t *testing.T) {
	assert.Equal(t, 1000, Shape1k.Series())
	assert.Equal(t, 100_000, Shape100k.Series())
	assert.Equal(t, "1k series", Shape1k.String())
	assert.Equal(t, "100k series", Shape100k.String())
	assert.Equal(t, "1M series", Shape1M.String())
	assert.Equal(t, "12 series", Shape{Services: 1, SpanNames: 3}.String())
}

// seriesKey is what spanmetrics keys a series on by default.
type seriesKey struct {
	service, name string
	kind          ptrace.SpanKind
	status        ptrace.StatusCode
}

func countSeries(t *testing.T, p *Pool) map[seriesKey]int {
	t.Helper()
	counts := map[seriesKey]int{}
	for i, td := range p.Traces {
		// The encoded request must carry the same spans as the pdata one.
		req := ptraceotlp.NewExportRequest()
		require.NoError(t, req.UnmarshalProto(p.Encoded[i]))
		require.Equal(t, td.SpanCount(), req.Traces().SpanCount())
		require.Equal(t, p.SpansPerRequest, td.SpanCount())
		for _, rs := range td.ResourceSpans().All() {
			svc, ok := rs.Resource().Attributes().Get("service.name")
			require.True(t, ok)
			for _, ss := range rs.ScopeSpans().All() {
				for _, s := range ss.Spans().All() {
					require.Greater(t, s.EndTimestamp(), s.StartTimestamp())
					counts[seriesKey{svc.Str(), s.Name(), s.Kind(), s.Status().Code()}]++
				}
			}
		}
	}
	return counts
}

func TestPoolCoversEverySeriesEqually(t *testing.T) {
	for _, tc := range []struct {
		shape           Shape
		spansPerRequest int
		wantRequests    int
	}{
		{shape: Shape{Services: 10, SpanNames: 25}, spansPerRequest: 1000, wantRequests: 8},
		{shape: Shape{Services: 10, SpanNames: 250}, spansPerRequest: 1000, wantRequests: 10},
		{shape: Shape{Services: 3, SpanNames: 5}, spansPerRequest: 7, wantRequests: 9},
	} {
		t.Run(tc.shape.String(), func(t *testing.T) {
			p, err := NewPool(tc.shape, tc.spansPerRequest, 42)
			require.NoError(t, err)
			require.Len(t, p.Encoded, tc.wantRequests)
			counts := countSeries(t, p)
			require.Len(t, counts, tc.shape.Series())
			total := tc.wantRequests * tc.spansPerRequest
			if total%tc.shape.Series() == 0 {
				for k, n := range counts {
					require.Equal(t, total/tc.shape.Series(), n, "series %v", k)
				}
			}
		})
	}
}

func TestPoolHasErrorsAndBothKinds(t *testing.T) {
	p, err := NewPool(Shape{Services: 2, SpanNames: 2}, 16, 1)
	require.NoError(t, err)
	counts := countSeries(t, p)
	var errs, clients int
	for k, n := range counts {
		if k.status == ptrace.StatusCodeError {
			errs += n
		}
		if k.kind == ptrace.SpanKindClient {
			clients += n
		}
	}
	total := len(p.Traces) * 16
	assert.Equal(t, total/2, errs)
	assert.Equal(t, total/2, clients)
}

func TestNewPoolRejectsEmptyShape(t *testing.T) {
	_, err := NewPool(Shape{}, 10, 1)
	require.Error(t, err)
	_, err = NewPool(Shape1k, 0, 1)
	require.Error(t, err)
}
