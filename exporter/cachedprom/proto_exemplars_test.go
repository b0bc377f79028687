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

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
)

// scrapeNativeExemplars scrapes url as Prometheus 3 with native histograms
// does (the protobuf body is rendered once a protobuf client asked), decodes
// the body with expfmt and returns the only series' native histogram.
func scrapeNativeExemplars(t *testing.T, e *cachedExporter, url string) *dto.Histogram {
	t.Helper()
	e.renderNow()
	promtest.Scrape(t, url, acceptProm3Native, true)
	e.renderNow()
	body, resp := promtest.Scrape(t, url, acceptProm3Native, true)
	require.Equal(t, wantContentTypeProto, resp.Header.Get("Content-Type"))
	fams := promtest.DecodeProto(t, body)
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
	exTS := promtest.NHStart.Add(30 * time.Second)
	withEx := promtest.ExpPoint{Scale: 2, Pos: []uint64{3, 4}, Sum: 9, Exemplars: []promtest.ExpExemplar{
		{Value: 1.5, TS: exTS, TraceID: tid(1), SpanID: sid(1)},
		{Value: 2.25, TraceID: tid(2), SpanID: sid(2)}, // no timestamp: the point's
	}}

	t.Run("cumulative", func(t *testing.T) {
		e, url := startOurs(t, nil)
		md := promtest.ExpBatch(false, 0, withEx.Build())
		require.NoError(t, e.ConsumeMetrics(context.Background(), md))
		pointTS := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).ExponentialHistogram().DataPoints().At(0).Timestamp().AsTime()
		h := scrapeNativeExemplars(t, e, url)
		assertExemplars(t, []wantExemplar{{1.5, exTS, hexT(1), hexS(1)}, {2.25, pointTS, hexT(2), hexS(2)}}, h.Exemplars)

		// A later cumulative point without exemplars leaves none.
		require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.ExpBatch(false, 1, promtest.ExpPoint{Scale: 2, Pos: []uint64{5, 4}, Sum: 11}.Build())))
		assert.Empty(t, scrapeNativeExemplars(t, e, url).Exemplars)
	})

	t.Run("delta", func(t *testing.T) {
		e, url := startOurs(t, nil)
		require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.ExpBatch(true, 0, withEx.Build())))
		p0TS := promtest.NHStart.Add(time.Minute)
		h := scrapeNativeExemplars(t, e, url)
		assertExemplars(t, []wantExemplar{{1.5, exTS, hexT(1), hexS(1)}, {2.25, p0TS, hexT(2), hexS(2)}}, h.Exemplars)

		// A delta without exemplars keeps them; one with exemplars replaces them.
		require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.ExpBatch(true, 1, promtest.ExpPoint{Scale: 2, Pos: []uint64{1}, Sum: 1}.Build())))
		h = scrapeNativeExemplars(t, e, url)
		assert.Equal(t, uint64(8), h.GetSampleCount())
		assertExemplars(t, []wantExemplar{{1.5, exTS, hexT(1), hexS(1)}, {2.25, p0TS, hexT(2), hexS(2)}}, h.Exemplars)

		later := promtest.NHStart.Add(150 * time.Second)
		p := promtest.ExpPoint{Scale: 1, Pos: []uint64{2}, Sum: 3, Exemplars: []promtest.ExpExemplar{{Value: 7, TS: later, TraceID: tid(3), SpanID: sid(3)}}}
		require.NoError(t, e.ConsumeMetrics(context.Background(), promtest.ExpBatch(true, 2, p.Build())))
		h = scrapeNativeExemplars(t, e, url)
		assert.Equal(t, uint64(10), h.GetSampleCount())
		assertExemplars(t, []wantExemplar{{7, later, hexT(3), hexS(3)}}, h.Exemplars)
	})

	t.Run("text unchanged", func(t *testing.T) {
		render := func(p promtest.ExpPoint) []byte {
			text, _, _, _ := renderBoth(createDefaultConfig().(*Config), promtest.ExpBatch(false, 0, p.Build()))
			return text
		}
		without := withEx
		without.Exemplars = nil
		assert.Equal(t, string(render(without)), string(render(withEx)))
	})
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
		body, _ := promtest.Scrape(t, url, acceptProm3Native, true)
		for _, mf := range promtest.DecodeProto(t, body) {
			if mf.GetName() == "latency" {
				require.Len(t, mf.Metric, 1)
				return mf.Metric[0].Histogram
			}
		}
		t.Fatal("the stock exporter serves no latency histogram")
		return nil
	}
	exTS := promtest.NHStart.Add(30 * time.Second)
	tid := pcommon.TraceID{1, 2, 3}
	first := promtest.ExpPoint{Scale: 2, Pos: []uint64{3, 4}, Sum: 9, Exemplars: []promtest.ExpExemplar{
		{Value: 1.5, TS: exTS, TraceID: tid},
		{Value: 2.25, TraceID: tid}, // no timestamp
	}}
	tidHex := hex.EncodeToString(tid[:])
	timed := fmt.Sprintf("1.5@%s{trace_id=%s}", exTS.Format(time.RFC3339Nano), tidHex)
	untimed := func(at time.Time) string {
		return fmt.Sprintf("2.25@%s{trace_id=%s}", at.UTC().Format(time.RFC3339Nano), tidHex)
	}

	t.Run("cumulative", func(t *testing.T) {
		ours, ourURL := startOurs(t, nil)
		stock, stockURL := promtest.StartStock(t, nil)
		md := promtest.ExpBatch(false, 0, first.Build())
		pointTS := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).ExponentialHistogram().DataPoints().At(0).Timestamp().AsTime()
		feedBoth(t, ours, stock, md)
		assert.Equal(t, []string{timed, untimed(time.Unix(0, 0))}, promtest.ExemplarStrings(stockNative(t, stockURL).Exemplars))
		assert.Equal(t, []string{timed, untimed(pointTS)}, promtest.ExemplarStrings(scrapeNativeExemplars(t, ours, ourURL).Exemplars))
	})

	t.Run("delta", func(t *testing.T) {
		ours, ourURL := startOurs(t, nil)
		stock, stockURL := promtest.StartStock(t, nil)
		later := promtest.NHStart.Add(90 * time.Second)
		second := promtest.ExpPoint{Scale: 2, Pos: []uint64{1}, Sum: 1, Exemplars: []promtest.ExpExemplar{{Value: 7, TS: later, TraceID: tid}}}
		feedBoth(t, ours, stock, promtest.ExpBatch(true, 0, first.Build()), promtest.ExpBatch(true, 1, second.Build()))
		sh, oh := stockNative(t, stockURL), scrapeNativeExemplars(t, ours, ourURL)
		assert.Equal(t, uint64(8), sh.GetSampleCount())
		assert.Equal(t, uint64(8), oh.GetSampleCount())
		assert.Empty(t, sh.Exemplars, "the stock exporter's sum of deltas keeps no exemplars")
		assert.Equal(t, []string{fmt.Sprintf("7@%s{trace_id=%s}", later.Format(time.RFC3339Nano), tidHex)}, promtest.ExemplarStrings(oh.Exemplars))
	})
}
