package store

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
)

// histPoint is one histogram point of series "lat" (attribute k) with
// bounds 1, 2, ... and the given counts.
func histPoint(temporality pmetric.AggregationTemporality, k string, start, end time.Time, counts ...uint64) pmetric.Metrics {
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("lat")
	h := m.SetEmptyHistogram()
	h.SetAggregationTemporality(temporality)
	dp := h.DataPoints().AppendEmpty()
	dp.Attributes().PutStr("k", k)
	dp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	dp.SetTimestamp(pcommon.NewTimestampFromTime(end))
	var total uint64
	for i, c := range counts {
		if i > 0 {
			dp.ExplicitBounds().Append(float64(i))
		}
		total += c
	}
	dp.BucketCounts().FromRaw(counts)
	dp.SetCount(total)
	return md
}

// TestBucketCountsWidenPastUint32: counts start 32 bits wide and a count
// that needs more turns its row wide with every count kept: a cumulative
// point, deltas adding up past 2^32, and the increases of merged writers.
// Rows that stay small stay narrow, and freed blocks of both widths are
// reused at their own width.
func TestBucketCountsWidenPastUint32(t *testing.T) {
	s := newTestStore()
	t.Cleanup(s.Close)
	t0 := promtest.TestBase
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	const big = uint64(math.MaxUint32)
	consume := func(md pmetric.Metrics) { s.Consume(md, time.Now()) }
	line := func(k, le string, v uint64) string {
		return `lat_bucket{k="` + k + `",otel_scope_name="",otel_scope_schema_url="",otel_scope_version="",le="` + le + `"} ` + strconv.FormatFloat(float64(v), 'g', -1, 64) + "\n"
	}
	wide := func(k string) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		lbl, ok := s.t.labels.find([]byte(`k="`+k+`",otel_scope_name="",otel_scope_schema_url="",otel_scope_version=""`),
			[]int{len(`k="` + k + `"`), len(`k="` + k + `",otel_scope_name=""`), len(`k="` + k + `",otel_scope_name="",otel_scope_schema_url=""`),
				len(`k="` + k + `",otel_scope_name="",otel_scope_schema_url="",otel_scope_version=""`)})
		require.True(t, ok, k)
		fam, ok := s.t.families.find("lat")
		require.True(t, ok)
		id, ok := s.t.rows.find(fam, lbl)
		require.True(t, ok, k)
		return s.t.rows.at(id).flags&rowWide != 0
	}

	// Cumulative: the second point's first bucket needs 33 bits.
	cumulative := pmetric.AggregationTemporalityCumulative
	consume(histPoint(cumulative, "cum", t0, at(1), 7, 9))
	assert.False(t, wide("cum"))
	consume(histPoint(cumulative, "cum", t0, at(2), big+5, 11))
	assert.True(t, wide("cum"))
	// Deltas: two that fit add up past 2^32.
	delta := pmetric.AggregationTemporalityDelta
	consume(histPoint(delta, "delta", at(0), at(1), big-1, 3))
	assert.False(t, wide("delta"))
	consume(histPoint(delta, "delta", at(1), at(2), 4, 3))
	assert.True(t, wide("delta"))
	// A small series beside them stays narrow.
	consume(histPoint(delta, "small", at(0), at(1), 1, 2))
	assert.False(t, wide("small"))

	// Merged writers: two OTLP series whose labels are equal once
	// sanitized (m.x and m_x); their increases add up past 2^32.
	merged := func(attr string, c0 uint64) pmetric.Metrics {
		md := histPoint(cumulative, "merged", t0, at(1), c0, 0)
		md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Histogram().DataPoints().At(0).Attributes().PutStr(attr, "1")
		return md
	}
	consume(merged("m.x", big-10))
	consume(merged("m_x", 20))

	out := sampleLines(s)
	assert.Contains(t, out, `lat_bucket{k="merged",m_x="1",otel_scope_name="",otel_scope_schema_url="",otel_scope_version="",le="1"} `+strconv.FormatFloat(float64(big+10), 'g', -1, 64)+"\n")
	assert.Contains(t, out, line("cum", "1", big+5))
	assert.Contains(t, out, line("cum", "+Inf", big+16))
	assert.Contains(t, out, line("delta", "1", big+3))
	assert.Contains(t, out, line("delta", "+Inf", big+9))
	assert.Contains(t, out, line("small", "+Inf", 3))

	// A wide row keeps its width while its layout holds; a new layout gives
	// it a narrow block again.
	consume(histPoint(cumulative, "cum", t0, at(3), big+6, 11))
	assert.True(t, wide("cum"))
	consume(histPoint(cumulative, "cum", at(3), at(4), 1, 1, 1))
	assert.False(t, wide("cum"))
	assert.Contains(t, sampleLines(s), line("cum", "+Inf", 3))

	// Freed blocks are reused at their width: expire the four (a fifth
	// series, updated later, keeps the arena), then create a wide and a
	// narrow row again; the arena does not grow.
	mark := time.Now()
	time.Sleep(2 * time.Millisecond)
	consume(histPoint(delta, "keep", at(5), at(6), 1, 2))
	require.Equal(t, 4, s.Expire(mark))
	used := s.t.buckets.used
	consume(histPoint(delta, "a", at(10), at(11), big+1, 0))
	consume(histPoint(delta, "b", at(10), at(11), 1, 0))
	assert.True(t, wide("a"))
	assert.False(t, wide("b"))
	assert.Equal(t, used, s.t.buckets.used, "the freed blocks were reused")
}
