package tracemetrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/latespans"
)

// lateTraces returns one span per end time in ends (offsets from testStart, which is the
// connectors' clock when they reduce), in two services, each 10ms long.
func lateTraces(ends []time.Duration) ptrace.Traces {
	td := ptrace.NewTraces()
	for svc := range 2 {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr(series.ServiceNameKey, fmt.Sprint("svc-", svc))
		ss := rs.ScopeSpans().AppendEmpty()
		for i, end := range ends {
			if i%2 != svc {
				continue
			}
			sp := ss.Spans().AppendEmpty()
			sp.SetName(fmt.Sprint("op-", i%3))
			sp.SetKind(ptrace.SpanKindServer)
			sp.SetTraceID(pcommon.TraceID{byte(i), 1})
			sp.SetSpanID(pcommon.SpanID{byte(i), 2})
			e := pcommon.NewTimestampFromTime(testStart.Add(end))
			sp.SetEndTimestamp(e)
			sp.SetStartTimestamp(e - pcommon.Timestamp(10*time.Millisecond))
		}
	}
	return td
}

// lateCalls sums the calls data points of md: those on time, and those marked late="true".
func lateCalls(t testing.TB, md pmetric.Metrics) (onTime, late int64) {
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Name() != "traces.span.metrics.calls" {
					continue
				}
				for _, dp := range m.Sum().DataPoints().All() {
					v, ok := dp.Attributes().Get(series.LateKey)
					switch {
					case !ok:
						onTime += dp.IntValue()
					case v.Str() == "true":
						late += dp.IntValue()
					default:
						t.Fatalf("late=%q", v.AsString())
					}
				}
			}
		}
	}
	return onTime, late
}

// The three policies, from pdata and from the wire: spans within the slack (behind or ahead)
// are counted as always; late and early ones are counted as now, dropped, or counted in series
// marked late="true"; the telemetry counts them by direction, and every span's lag.
func TestLateSpansPolicies(t *testing.T) {
	ends := []time.Duration{
		-time.Second, 0, 20 * time.Second, -25 * time.Second, // on time
		-31 * time.Second, -10 * time.Minute, -2 * time.Hour, // late
		31 * time.Second, time.Hour, // early
	}
	const onTime, late, early = 4, 3, 2
	for _, tc := range []struct {
		policy               string
		wantOnTime, wantLate int64
	}{
		{"", onTime + late + early, 0},
		{"count_now", onTime + late + early, 0},
		{"drop", onTime, 0},
		{"separate", onTime, late + early},
	} {
		for _, source := range []string{"pdata", "wire"} {
			t.Run(tc.policy+"/"+source, func(t *testing.T) {
				raw := map[string]any{"late_spans": map[string]any{"policy": tc.policy}}
				r := startConnector(t, NewFactory(), raw)
				td := lateTraces(ends)
				if source == "wire" {
					td = wireEncodings[0].enc(t, td)
				}
				r.consume(td)
				gotOnTime, gotLate := lateCalls(t, settledFlush(t, r))
				require.Equal(t, tc.wantOnTime, gotOnTime, "calls on time")
				require.Equal(t, tc.wantLate, gotLate, "calls marked late")
				c := r.conn.(*connectorImp)
				require.EqualValues(t, late, c.tel.Late.Spans[latespans.Late].Load())
				require.EqualValues(t, early, c.tel.Late.Spans[latespans.Early].Load())
				var lag [latespans.NumLagBuckets]int64
				for i := range lag {
					lag[i] = c.tel.Late.Lag[i].Load()
				}
				// Lag is now - end: -1h and -31s are early (≤ -60, ≤ -5), 20s ahead is ≤ -5,
				// 0 and -1s behind are ≤ 1, 25s ≤ 30, 31s ≤ 60, 10m ≤ 600, 2h +Inf.
				want := [latespans.NumLagBuckets]int64{0: 1, 1: 2, 2: 2, 5: 1, 6: 1, 9: 1, 12: 1}
				require.Equal(t, want, lag)
			})
		}
	}
}

// A separate series is its on-time twin plus the mark: the late service's calls and duration
// points carry late="true" and nothing else tells them apart.
func TestLateSpansSeparateSeries(t *testing.T) {
	r := startConnector(t, NewFactory(), map[string]any{
		"late_spans": map[string]any{"policy": "separate", "slack": "1m"},
	})
	// svc-0's span is on time, svc-1's two minutes late.
	r.consume(lateTraces([]time.Duration{-time.Second, -2 * time.Minute}))
	got := points(t, settledFlush(t, r), false)
	require.Len(t, got, 4) // calls and duration, per service
	for k := range got {
		marked := strings.Contains(k, `late=Str:"true"`)
		require.Equal(t, strings.Contains(k, `"svc-1"`), marked, k)
		require.Equal(t, marked, strings.Count(k, "late=") == 1, k)
	}
}

// Exact totals, as a property: whatever the policy, slacks and end times, every span is
// counted exactly once across the series on time, the series marked late and the dropped
// count, and a span is on time exactly when its end is within the slacks of the clock.
func TestLateSpansExactTotals(t *testing.T) {
	rnd := newRand(41)
	for round := range 12 {
		policy := []string{"count_now", "drop", "separate"}[round%3]
		slack := time.Duration(1+rnd.IntN(600)) * time.Second
		future := time.Duration(1+rnd.IntN(120)) * time.Second
		source := []string{"pdata", "wire"}[round/3%2]
		t.Run(fmt.Sprintf("%d/%s/%s", round, policy, source), func(t *testing.T) {
			r := startConnector(t, NewFactory(), map[string]any{
				"aggregation_temporality": "AGGREGATION_TEMPORALITY_DELTA",
				"late_spans":              map[string]any{"policy": policy, "slack": slack, "future_slack": future},
			})
			var total, onTime int64
			for range 5 {
				ends := make([]time.Duration, 1+rnd.IntN(300))
				for i := range ends {
					ends[i] = time.Duration(rnd.Int64N(int64(40*time.Minute))) - 30*time.Minute
					if rnd.IntN(8) == 0 { // exactly on a slack's edge: still on time
						ends[i] = []time.Duration{-slack, future}[rnd.IntN(2)]
					}
					if ends[i] >= -slack && ends[i] <= future {
						onTime++
					}
				}
				total += int64(len(ends))
				td := lateTraces(ends)
				if source == "wire" {
					td = wireEncodings[rnd.IntN(len(wireEncodings))].enc(t, td)
				}
				r.consume(td)
			}
			gotOnTime, gotLate := lateCalls(t, settledFlush(t, r))
			c := r.conn.(*connectorImp)
			outside := c.tel.Late.Spans[latespans.Late].Load() + c.tel.Late.Spans[latespans.Early].Load()
			require.Equal(t, total-onTime, outside, "late and early spans")
			var dropped int64
			switch policy {
			case "count_now":
				require.Equal(t, total, gotOnTime)
			case "drop":
				dropped = outside
				require.Equal(t, onTime, gotOnTime)
			case "separate":
				require.Equal(t, onTime, gotOnTime)
				require.Equal(t, outside, gotLate)
			}
			require.Equal(t, total, gotOnTime+gotLate+dropped, "every span once")
			var lagged int64
			for i := range latespans.NumLagBuckets {
				lagged += c.tel.Late.Lag[i].Load()
			}
			require.Equal(t, total, lagged, "every span's lag")
		})
	}
}

// late_spans errors name the key.
func TestLateSpansValidate(t *testing.T) {
	for _, tc := range []struct {
		raw  map[string]any
		want string
	}{
		{map[string]any{"policy": "later"}, `late_spans.policy: "later", use "count_now", "drop" or "separate"`},
		{map[string]any{"slack": "-1s"}, "late_spans.slack: -1s, must be positive or 0 (default 30s)"},
		{map[string]any{"future_slack": "-2s"}, "late_spans.future_slack: -2s, must be positive or 0 (default 30s)"},
	} {
		cfg := createDefaultConfig().(*Config)
		require.NoError(t, confmap.NewFromStringMap(map[string]any{"late_spans": tc.raw}).Unmarshal(cfg))
		require.EqualError(t, cfg.Validate(), tc.want)
	}
	cfg := createDefaultConfig().(*Config)
	require.Equal(t, latespans.Policy{Mode: latespans.CountNow, Behind: int64(30 * time.Second), Ahead: int64(30 * time.Second)}, cfg.LateSpans.Resolve())
}
