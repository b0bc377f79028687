package cachedprom

import (
	"context"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"
)

// scrapeNativeExemplars scrapes url as Prometheus 3 with native histograms
// does (the protobuf body is rendered once a protobuf client asked), decodes
// the body with expfmt and returns the only series' native histogram.
func scrapeNativeExemplars(t *testing.T, e *cachedExporter, url string) *dto.Histogram {
	t.Helper()
	e.renderNow()
	scrape(t, url, acceptProm3Native, true)
	e.renderNow()
	body, resp := scrape(t, url, acceptProm3Native, true)
	require.Equal(t, wantContentTypeProto, resp.Header.Get("Content-Type"))
	fams := decodeProto(t, body)
	require.Len(t, fams, 1)
	require.Len(t, fams[0].Metric, 1)
	h := fams[0].Metric[0].Histogram
	require.NotNil(t, h)
	require.NotNil(t, h.Schema, "a native histogram")
	return h
}

type wantExemplar struct {
	value          float64
	ts             time.Time
	trace, spanHex string
}

func assertExemplars(t *testing.T, want []wantExemplar, got []*dto.Exemplar) {
	t.Helper()
	require.Len(t, got, len(want))
	for i, w := range want {
		x := got[i]
		assert.Equal(t, w.value, x.GetValue(), "exemplar %d value", i)
		require.NotNil(t, x.Timestamp, "exemplar %d: Prometheus ignores native histogram exemplars without a timestamp", i)
		assert.True(t, w.ts.Equal(x.Timestamp.AsTime()), "exemplar %d timestamp %v, want %v", i, x.Timestamp.AsTime(), w.ts)
		labels := map[string]string{}
		for _, lp := range x.Label {
			labels[lp.GetName()] = lp.GetValue()
		}
		assert.Equal(t, map[string]string{"trace_id": w.trace, "span_id": w.spanHex}, labels, "exemplar %d labels", i)
	}
}

// TestNativeHistogramExemplarsServed: the exemplars of exponential
// histogram points reach the native histograms of the protobuf body, with
// their timestamps (the point's for one without) and trace_id and span_id
// labels, without enable_open_metrics (only the protobuf body can show
// them); the text body is unchanged by them. Deltas keep the latest
// point's exemplars, and the earlier ones while a point brings none.
func TestNativeHistogramExemplarsServed(t *testing.T) {
	tid := func(b byte) pcommon.TraceID {
		return pcommon.TraceID{b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, b}
	}
	sid := func(b byte) pcommon.SpanID { return pcommon.SpanID{b, 9, 8, 7, 6, 5, 4, b} }
	hexT := func(b byte) string { id := tid(b); return hex.EncodeToString(id[:]) }
	hexS := func(b byte) string { id := sid(b); return hex.EncodeToString(id[:]) }
	exTS := nhStart.Add(30 * time.Second)
	withEx := expPoint{scale: 2, pos: []uint64{3, 4}, sum: 9, exemplars: []expExemplar{
		{value: 1.5, ts: exTS, traceID: tid(1), spanID: sid(1)},
		{value: 2.25, traceID: tid(2), spanID: sid(2)}, // no timestamp: the point's
	}}

	t.Run("cumulative", func(t *testing.T) {
		e, url := startOurs(t, nil)
		md := expBatch(false, 0, withEx.build())
		require.NoError(t, e.ConsumeMetrics(context.Background(), md))
		pointTS := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).ExponentialHistogram().DataPoints().At(0).Timestamp().AsTime()
		h := scrapeNativeExemplars(t, e, url)
		assertExemplars(t, []wantExemplar{{1.5, exTS, hexT(1), hexS(1)}, {2.25, pointTS, hexT(2), hexS(2)}}, h.Exemplars)

		// A later cumulative point without exemplars leaves none.
		require.NoError(t, e.ConsumeMetrics(context.Background(), expBatch(false, 1, expPoint{scale: 2, pos: []uint64{5, 4}, sum: 11}.build())))
		assert.Empty(t, scrapeNativeExemplars(t, e, url).Exemplars)
	})

	t.Run("delta", func(t *testing.T) {
		e, url := startOurs(t, nil)
		require.NoError(t, e.ConsumeMetrics(context.Background(), expBatch(true, 0, withEx.build())))
		p0TS := nhStart.Add(time.Minute)
		h := scrapeNativeExemplars(t, e, url)
		assertExemplars(t, []wantExemplar{{1.5, exTS, hexT(1), hexS(1)}, {2.25, p0TS, hexT(2), hexS(2)}}, h.Exemplars)

		// A delta without exemplars keeps them; one with exemplars replaces them.
		require.NoError(t, e.ConsumeMetrics(context.Background(), expBatch(true, 1, expPoint{scale: 2, pos: []uint64{1}, sum: 1}.build())))
		h = scrapeNativeExemplars(t, e, url)
		assert.Equal(t, uint64(8), h.GetSampleCount())
		assertExemplars(t, []wantExemplar{{1.5, exTS, hexT(1), hexS(1)}, {2.25, p0TS, hexT(2), hexS(2)}}, h.Exemplars)

		later := nhStart.Add(150 * time.Second)
		p := expPoint{scale: 1, pos: []uint64{2}, sum: 3, exemplars: []expExemplar{{value: 7, ts: later, traceID: tid(3), spanID: sid(3)}}}
		require.NoError(t, e.ConsumeMetrics(context.Background(), expBatch(true, 2, p.build())))
		h = scrapeNativeExemplars(t, e, url)
		assert.Equal(t, uint64(10), h.GetSampleCount())
		assertExemplars(t, []wantExemplar{{7, later, hexT(3), hexS(3)}}, h.Exemplars)
	})

	t.Run("text unchanged", func(t *testing.T) {
		render := func(p expPoint) []byte {
			text, _, _, _ := renderBoth(createDefaultConfig().(*Config), expBatch(false, 0, p.build()))
			return text
		}
		without := withEx
		without.exemplars = nil
		assert.Equal(t, string(render(without)), string(render(withEx)))
	})
}

// TestExemplarsStoredWithoutAllocating: replacing a series' exemplars
// with a point's allocates nothing once the series has held as many: the
// ids are kept as bytes and written as labels only when rendered.
func TestExemplarsStoredWithoutAllocating(t *testing.T) {
	s := newSeriesStore(createDefaultConfig().(*Config), zap.NewNop())
	dp := expPoint{scale: 2, pos: []uint64{1}, sum: 1}.build()
	for i := range 5 {
		e := dp.Exemplars().AppendEmpty()
		e.SetDoubleValue(float64(i))
		e.SetTraceID(pcommon.TraceID{byte(i), 1})
		e.SetSpanID(pcommon.SpanID{byte(i), 2})
	}
	s.setExemplars(7, dp.Exemplars(), dp.Timestamp())
	allocs := testing.AllocsPerRun(100, func() { s.setExemplars(7, dp.Exemplars(), dp.Timestamp()) })
	assert.Zero(t, allocs)
	require.Len(t, s.exs[7], 5)
	assert.Equal(t, `span_id="0402000000000000",trace_id="04010000000000000000000000000000"`, string(s.exs[7][4].appendLabels(nil)))
}

// TestNativeExemplarsBesideStockExporter pins where the native histograms'
// exemplars differ from the prometheus exporter's (v0.165.1), which attaches
// them too: where both have them with their own timestamps they agree
// (TestEquivalentToPrometheusExporter); an exemplar without a timestamp
// gets the Unix epoch from it (so Prometheus files it at 1970) and its
// point's timestamp from us; and its sum of deltas has none, ours the
// latest delta's.
func TestNativeExemplarsBesideStockExporter(t *testing.T) {
	stockNative := func(t *testing.T, url string) *dto.Histogram {
		t.Helper()
		body, _ := scrape(t, url, acceptProm3Native, true)
		for _, mf := range decodeProto(t, body) {
			if mf.GetName() == "latency" {
				require.Len(t, mf.Metric, 1)
				return mf.Metric[0].Histogram
			}
		}
		t.Fatal("the stock exporter serves no latency histogram")
		return nil
	}
	exTS := nhStart.Add(30 * time.Second)
	tid := pcommon.TraceID{1, 2, 3}
	first := expPoint{scale: 2, pos: []uint64{3, 4}, sum: 9, exemplars: []expExemplar{
		{value: 1.5, ts: exTS, traceID: tid},
		{value: 2.25, traceID: tid}, // no timestamp
	}}
	tidHex := hex.EncodeToString(tid[:])
	timed := fmt.Sprintf("1.5@%s{trace_id=%s}", exTS.Format(time.RFC3339Nano), tidHex)
	untimed := func(at time.Time) string {
		return fmt.Sprintf("2.25@%s{trace_id=%s}", at.UTC().Format(time.RFC3339Nano), tidHex)
	}

	t.Run("cumulative", func(t *testing.T) {
		ours, ourURL := startOurs(t, nil)
		stock, stockURL := startStock(t, nil)
		md := expBatch(false, 0, first.build())
		pointTS := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).ExponentialHistogram().DataPoints().At(0).Timestamp().AsTime()
		feedBoth(t, ours, stock, md)
		assert.Equal(t, []string{timed, untimed(time.Unix(0, 0))}, exemplarStrings(stockNative(t, stockURL).Exemplars))
		assert.Equal(t, []string{timed, untimed(pointTS)}, exemplarStrings(scrapeNativeExemplars(t, ours, ourURL).Exemplars))
	})

	t.Run("delta", func(t *testing.T) {
		ours, ourURL := startOurs(t, nil)
		stock, stockURL := startStock(t, nil)
		later := nhStart.Add(90 * time.Second)
		second := expPoint{scale: 2, pos: []uint64{1}, sum: 1, exemplars: []expExemplar{{value: 7, ts: later, traceID: tid}}}
		feedBoth(t, ours, stock, expBatch(true, 0, first.build()), expBatch(true, 1, second.build()))
		sh, oh := stockNative(t, stockURL), scrapeNativeExemplars(t, ours, ourURL)
		assert.Equal(t, uint64(8), sh.GetSampleCount())
		assert.Equal(t, uint64(8), oh.GetSampleCount())
		assert.Empty(t, sh.Exemplars, "the stock exporter's sum of deltas keeps no exemplars")
		assert.Equal(t, []string{fmt.Sprintf("7@%s{trace_id=%s}", later.Format(time.RFC3339Nano), tidHex)}, exemplarStrings(oh.Exemplars))
	})
}
