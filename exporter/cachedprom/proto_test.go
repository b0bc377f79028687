package cachedprom

import (
	"fmt"
	"math"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"
)

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
	out := promtest.FlattenFamilies(byName)
	for _, mf := range fams {
		for _, m := range mf.Metric {
			h := m.Histogram
			if h == nil {
				continue
			}
			if n := len(h.Bucket); n > 0 && math.IsInf(h.Bucket[n-1].GetUpperBound(), +1) {
				continue
			}
			flat := promtest.FlattenFamilies(map[string]*dto.MetricFamily{mf.GetName(): {Name: mf.Name, Type: mf.Type, Metric: []*dto.Metric{m}}})
			for k := range flat {
				if key, ok := cutSuffix(k, "_count"); ok {
					out[key+"le"+promtest.FmtVal(math.Inf(1))] = fmt.Sprint(h.GetSampleCount())
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

// renderBoth renders the text and protobuf bodies of a store of cfg that
// holds batches.
func renderBoth(cfg *Config, batches ...pmetric.Metrics) (text, pb []byte, s *store.Store, rd *render.Renderer) {
	s = newStore(cfg, readGates(), zap.NewNop())
	for _, b := range batches {
		s.Consume(b, time.Now())
	}
	rd = render.New(render.Options{WithTimestamps: cfg.SendTimestamps})
	text = rd.Text(nil, s)
	pb = rd.Proto(nil, s)
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
			text, pb, _, rd := renderBoth(cfg, promtest.WithRecentCases(0, base), promtest.WithRecentCases(1, base))
			fams := promtest.DecodeProto(t, pb)
			require.NotEmpty(t, fams)
			assertSameMaps(t, promtest.ParseText(t, text), flattenProto(t, fams), "protobuf vs text")
			assert.Zero(t, rd.NativeRefused())

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
