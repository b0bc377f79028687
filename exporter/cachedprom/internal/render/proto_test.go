package render

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/protobuf/proto"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/naming"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"
)

// TestProtoLabelsRoundTrip: rendered labels parse back to the values they
// were rendered from, escapes and quoted names included.
func TestProtoLabelsRoundTrip(t *testing.T) {
	pairs := []struct{ name, value string }{
		{name: "a", value: ""},
		{name: "b", value: `x"y\z` + "\nw"},
		{name: "c.d", value: "ünï🙂,=}"},
		{name: "e", value: `\\\"`},
	}
	var b []byte
	for i, p := range pairs {
		if i > 0 {
			b = append(b, ',')
		}
		b = naming.AppendLabel(b, p.name, p.value)
	}
	var pr protoRenderer
	pr.names = map[string]*string{}
	got := pr.labelPairs(nil, b, string(b), true)
	require.Len(t, got, len(pairs))
	for i, p := range pairs {
		assert.Equal(t, p.name, got[i].GetName())
		assert.Equal(t, p.value, got[i].GetValue())
	}
}

// TestProtoBodyIsExpfmtEncoding: the body, built a frame at a time, is
// byte for byte what expfmt's delimited encoder writes for the decoded
// families, each in one piece.
func TestProtoBodyIsExpfmtEncoding(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	batches := []pmetric.Metrics{promtest.MixedMetrics(0, base), promtest.MixedMetrics(1, base)}
	// More series than a frame, so families span several frames.
	for i := range 3 * store.FrameRows {
		batches = append(batches, promtest.GaugeBatch("many", base, fmt.Sprint(i)))
	}
	// Exemplars kept, as with enable_open_metrics.
	s := testStore(func(o *store.Options) { o.Exemplars = true }, batches...)
	defer s.Close()
	pb := New(Options{}).Proto(nil, s)
	fams := promtest.DecodeProto(t, pb)
	var want bytes.Buffer
	enc := expfmt.NewEncoder(&want, expfmt.NewFormat(expfmt.TypeProtoDelim))
	for _, mf := range fams {
		require.NoError(t, enc.Encode(mf))
		if mf.GetName() == "many" {
			assert.Len(t, mf.Metric, 3*store.FrameRows)
		}
	}
	assert.Equal(t, want.Bytes(), pb)
}

// TestProtoNativeHistograms: the native histogram served for a series is
// nativeHistogram of its last cumulative point, or of the deltas merged
// (the merge itself is checked in the store's expbuckets_test.go).
func TestProtoNativeHistograms(t *testing.T) {
	last := promtest.ExpPoint{Scale: 10, PosOffset: -7, Pos: []uint64{1, 0, 0, 0, 5, 6}, NegOffset: 3, Neg: []uint64{2}, ZeroCount: 3, Sum: 42}.Build()
	cumulative := promtest.ExpBatch(false, 0, promtest.ExpPoint{Scale: 2, Pos: []uint64{9}, Sum: 1}.Build())
	s := testStore(nil, cumulative, promtest.ExpBatch(false, 1, last))
	defer s.Close()
	pb := New(Options{}).Proto(nil, s)
	fams := promtest.DecodeProto(t, pb)
	require.Len(t, fams, 1)
	assert.Equal(t, dto.MetricType_HISTOGRAM, fams[0].GetType())
	require.Len(t, fams[0].Metric, 1)
	want, err := nativeHistogram(promtest.ExpBatch(false, 1, last).ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).ExponentialHistogram().DataPoints().At(0))
	require.NoError(t, err)
	want.Exemplars = nil
	assert.True(t, proto.Equal(want, fams[0].Metric[0].Histogram), "got %v\nwant %v", fams[0].Metric[0].Histogram, want)

	// Deltas: two points, the second at a smaller scale.
	d1 := promtest.ExpPoint{Scale: 3, PosOffset: 4, Pos: []uint64{1, 2, 3, 4}, ZeroCount: 1, Sum: 5}.Build()
	d2 := promtest.ExpPoint{Scale: 2, PosOffset: 2, Pos: []uint64{10}, Sum: 7}.Build()
	s = testStore(nil, promtest.ExpBatch(true, 0, d1), promtest.ExpBatch(true, 1, d2))
	defer s.Close()
	pb = New(Options{}).Proto(nil, s)
	fams = promtest.DecodeProto(t, pb)
	require.Len(t, fams, 1)
	h := fams[0].Metric[0].Histogram
	// Scale 3 indexes 4..7 are scale 2 indexes 2,2,3,3: 3 and 7, plus 10
	// at 2: Prometheus indexes 3 and 4 hold 13 and 7.
	merged := promtest.ExpPoint{Scale: 2, PosOffset: 2, Pos: []uint64{13, 7}, ZeroCount: 1, Sum: 12}.Build()
	merged.SetStartTimestamp(pcommon.NewTimestampFromTime(promtest.NHStart))
	want, err = nativeHistogram(merged)
	require.NoError(t, err)
	want.Exemplars = nil
	assert.True(t, proto.Equal(want, h), "got %v\nwant %v", h, want)
	assert.Equal(t, uint64(21), h.GetSampleCount())
}
