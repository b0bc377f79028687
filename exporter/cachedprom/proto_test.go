package cachedprom

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// decodeProto decodes a delimited protobuf exposition with expfmt, in order.
func decodeProto(tb testing.TB, body []byte) []*dto.MetricFamily {
	tb.Helper()
	dec := expfmt.NewDecoder(bytes.NewReader(body), expfmt.NewFormat(expfmt.TypeProtoDelim))
	var fams []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			return fams
		}
		require.NoError(tb, err)
		fams = append(fams, mf)
	}
}

// flattenProto flattens decoded families as parseText does the text body.
// Prometheus reads a histogram's +Inf bucket from its count when the
// protobuf leaves it out, and the text formats show a native histogram as
// that bucket alone: both are added so the two bodies compare.
func flattenProto(tb testing.TB, fams []*dto.MetricFamily) map[string]string {
	tb.Helper()
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range fams {
		require.NotContains(tb, byName, mf.GetName(), "one message per family")
		byName[mf.GetName()] = mf
	}
	out := flattenFamilies(byName)
	for _, mf := range fams {
		for _, m := range mf.Metric {
			h := m.Histogram
			if h == nil {
				continue
			}
			if n := len(h.Bucket); n > 0 && math.IsInf(h.Bucket[n-1].GetUpperBound(), +1) {
				continue
			}
			flat := flattenFamilies(map[string]*dto.MetricFamily{mf.GetName(): {Name: mf.Name, Type: mf.Type, Metric: []*dto.Metric{m}}})
			for k := range flat {
				if key, ok := cutSuffix(k, "_count"); ok {
					out[key+"le"+fmtVal(math.Inf(1))] = fmt.Sprint(h.GetSampleCount())
				}
			}
		}
	}
	return out
}

func cutSuffix(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}

// renderBoth renders the store's text and protobuf bodies.
func renderBoth(cfg *Config, batches ...pmetric.Metrics) (text, pb []byte, s *seriesStore, rd *renderer) {
	s = newSeriesStore(cfg, zap.NewNop())
	for _, b := range batches {
		s.consume(b, time.Now())
	}
	rd = &renderer{withTimestamps: cfg.SendTimestamps}
	text = rd.renderText(nil, s)
	pb = rd.renderProto(nil, s)
	return text, pb, s, rd
}

// TestProtoBodyMatchesText: under every configuration variant, the
// protobuf body of the mixed input decodes with expfmt to the same
// families, labels and values as the text body parses to.
func TestProtoBodyMatchesText(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	for _, v := range configVariants {
		t.Run(v.name, func(t *testing.T) {
			v.setGates(t)
			cfg := createDefaultConfig().(*Config)
			if v.ours != nil {
				v.ours(cfg)
			}
			text, pb, _, rd := renderBoth(cfg, withRecentCases(0, base), withRecentCases(1, base))
			fams := decodeProto(t, pb)
			require.NotEmpty(t, fams)
			assertSameMaps(t, parseText(t, text), flattenProto(t, fams), "protobuf vs text")
			assert.Zero(t, rd.proto.refused)

			// Native histograms where the text shows only count and sum.
			natives := 0
			for _, mf := range fams {
				for _, m := range mf.Metric {
					if m.Histogram != nil && m.Histogram.Schema != nil {
						natives++
						assert.Empty(t, m.Histogram.Bucket)
						assert.NotEmpty(t, m.Histogram.PositiveSpan)
					}
				}
			}
			assert.Equal(t, 3, natives, "payload.size, exp.delta and request.size (not exp.nosum)")
		})
	}
}

// TestProtoBodyIsExpfmtEncoding: the body, built a frame at a time, is
// byte for byte what expfmt's delimited encoder writes for the decoded
// families, each in one piece.
func TestProtoBodyIsExpfmtEncoding(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	batches := []pmetric.Metrics{mixedMetrics(0, base), mixedMetrics(1, base)}
	// More series than a frame, so families span several frames.
	for i := range 3 * frameRows {
		batches = append(batches, gaugeBatch("many", base, fmt.Sprint(i)))
	}
	cfg := createDefaultConfig().(*Config)
	cfg.EnableOpenMetrics = true // exemplars kept
	_, pb, _, _ := renderBoth(cfg, batches...)
	fams := decodeProto(t, pb)
	var want bytes.Buffer
	enc := expfmt.NewEncoder(&want, expfmt.NewFormat(expfmt.TypeProtoDelim))
	for _, mf := range fams {
		require.NoError(t, enc.Encode(mf))
		if mf.GetName() == "many" {
			assert.Len(t, mf.Metric, 3*frameRows)
		}
	}
	assert.Equal(t, want.Bytes(), pb)
}

// TestProtoNativeHistograms: the native histogram served for a series is
// nativeHistogram of its last cumulative point, or of the deltas merged
// (the merge itself is checked in expbuckets_test.go).
func TestProtoNativeHistograms(t *testing.T) {
	last := expPoint{scale: 10, posOffset: -7, pos: []uint64{1, 0, 0, 0, 5, 6}, negOffset: 3, neg: []uint64{2}, zeroCount: 3, sum: 42}.build()
	cumulative := expBatch(false, 0, expPoint{scale: 2, pos: []uint64{9}, sum: 1}.build())
	_, pb, _, _ := renderBoth(createDefaultConfig().(*Config), cumulative, expBatch(false, 1, last))
	fams := decodeProto(t, pb)
	require.Len(t, fams, 1)
	assert.Equal(t, dto.MetricType_HISTOGRAM, fams[0].GetType())
	require.Len(t, fams[0].Metric, 1)
	want, err := nativeHistogram(expBatch(false, 1, last).ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).ExponentialHistogram().DataPoints().At(0))
	require.NoError(t, err)
	want.Exemplars = nil
	assert.True(t, proto.Equal(want, fams[0].Metric[0].Histogram), "got %v\nwant %v", fams[0].Metric[0].Histogram, want)

	// Deltas: two points, the second at a smaller scale.
	d1 := expPoint{scale: 3, posOffset: 4, pos: []uint64{1, 2, 3, 4}, zeroCount: 1, sum: 5}.build()
	d2 := expPoint{scale: 2, posOffset: 2, pos: []uint64{10}, sum: 7}.build()
	_, pb, _, _ = renderBoth(createDefaultConfig().(*Config), expBatch(true, 0, d1), expBatch(true, 1, d2))
	fams = decodeProto(t, pb)
	require.Len(t, fams, 1)
	h := fams[0].Metric[0].Histogram
	// Scale 3 indexes 4..7 are scale 2 indexes 2,2,3,3: 3 and 7, plus 10
	// at 2: Prometheus indexes 3 and 4 hold 13 and 7.
	merged := expPoint{scale: 2, posOffset: 2, pos: []uint64{13, 7}, zeroCount: 1, sum: 12}.build()
	merged.SetStartTimestamp(pcommon.NewTimestampFromTime(nhStart))
	want, err = nativeHistogram(merged)
	require.NoError(t, err)
	want.Exemplars = nil
	assert.True(t, proto.Equal(want, h), "got %v\nwant %v", h, want)
	assert.Equal(t, uint64(21), h.GetSampleCount())
}

// TestProtoLabelsRoundTrip: rendered labels parse back to the values they
// were rendered from, escapes and quoted names included.
func TestProtoLabelsRoundTrip(t *testing.T) {
	pairs := []labelPair{
		{name: "a", value: ""},
		{name: "b", value: `x"y\z` + "\nw"},
		{name: "c.d", value: "ünï🙂,=}"},
		{name: "e", value: `\\\"`},
	}
	b := appendLabels(nil, pairs)
	var pr protoRenderer
	pr.names = map[string]*string{}
	got := pr.labelPairs(nil, b, string(b), true)
	require.Len(t, got, len(pairs))
	for i, p := range pairs {
		assert.Equal(t, p.name, got[i].GetName())
		assert.Equal(t, p.value, got[i].GetValue())
	}
}
