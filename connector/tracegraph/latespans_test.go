package tracegraph

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracegraph/internal/metadata"
	"github.com/otelcol-red/otelcol-red/internal/latespans"
)

// lateNow is the clock of the late_spans tests' connectors.
var lateNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// startLate starts a connector on a fake clock at lateNow, with late_spans as given and
// virtual nodes off (an unpaired half records nothing).
func startLate(t *testing.T, late LateSpansConfig) (*connectorImp, *consumertest.MetricsSink) {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.LateSpans = late
	cfg.VirtualNodePeerAttributes = []string{}
	require.NoError(t, cfg.Validate())
	sink := &consumertest.MetricsSink{}
	c, err := newConnector(connectortest.NewNopSettings(metadata.Type).TelemetrySettings, cfg, sink, clockwork.NewFakeClockAt(lateNow))
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background(), nil))
	t.Cleanup(func() { _ = c.Shutdown(context.Background()) })
	return c, sink
}

// endingAt sets a span to end at lateNow+end, 5ms long.
func endingAt(end time.Duration) func(ptrace.Span) {
	return func(s ptrace.Span) {
		e := pcommon.NewTimestampFromTime(lateNow.Add(end))
		s.SetEndTimestamp(e)
		s.SetStartTimestamp(e - pcommon.Timestamp(5*time.Millisecond))
	}
}

// lateTotals splits the request_total points of the last flush into those on time (by edge)
// and those marked late="true".
func lateTotals(t *testing.T, md pmetric.Metrics) (onTime map[string]int64, late int64) {
	onTime = map[string]int64{}
	for k, n := range requestTotals(md) {
		if strings.Contains(k, "late=true") {
			late += n
			continue
		}
		require.NotContains(t, k, "late=")
		onTime[k] = n
	}
	return onTime, late
}

// The three policies, from pdata and from the wire: an edge with a half outside the slack is
// counted as now, dropped (late_edges{outcome="dropped"}), or counted in its late="true"
// series; its spans are counted by direction, and every edge span's lag.
func TestLateSpansPolicies(t *testing.T) {
	// Four edges: on time; the client 10 minutes late; the server 31s early; both an hour late.
	edges := []struct {
		client, server string
		cEnd, sEnd     time.Duration
	}{
		{"a", "b", -time.Second, -time.Second},
		{"c", "d", -10 * time.Minute, -29 * time.Second},
		{"e", "f", 29 * time.Second, 31 * time.Second},
		{"g", "h", -time.Hour, -time.Hour},
	}
	for _, tc := range []struct {
		policy     string
		wantOnTime int
		wantLate   int64
	}{
		{"", 4, 0},
		{latespans.PolicyCountNow, 4, 0},
		{latespans.PolicyDrop, 1, 0},
		{latespans.PolicySeparate, 1, 3},
	} {
		for _, wire := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/wire=%v", tc.policy, wire), func(t *testing.T) {
				c, sink := startLate(t, LateSpansConfig{Policy: tc.policy})
				for i, e := range edges {
					for _, td := range []ptrace.Traces{
						oneSpan(e.client, ptrace.SpanKindClient, byte(i+1), 1, 0, endingAt(e.cEnd)),
						oneSpan(e.server, ptrace.SpanKindServer, byte(i+1), 2, 1, endingAt(e.sEnd)),
					} {
						if wire {
							td = wireEncodings[i%len(wireEncodings)](t, td)
						}
						consume(t, c, td)
					}
				}
				require.NoError(t, c.Shutdown(context.Background()))
				onTime, late := lateTotals(t, lastFlush(t, sink))
				require.Len(t, onTime, tc.wantOnTime)
				require.EqualValues(t, 1, onTime["{client=a,connection_type=,failed=false,server=b}"])
				require.Equal(t, tc.wantLate, late)
				require.EqualValues(t, 3, c.tel.lateEdges.Load(), "edges with a half outside the slack")
				require.EqualValues(t, 3, c.tel.late.Spans[latespans.Late].Load())
				require.EqualValues(t, 1, c.tel.late.Spans[latespans.Early].Load())
				var lag [latespans.NumLagBuckets]int64
				for i := range lag {
					lag[i] = c.tel.late.Lag[i].Load()
				}
				// -31s and -29s (ahead) ≤ -5, 1s ≤ 1 (twice), 29s ≤ 30, 10m ≤ 600, 1h ≤ 3600 (twice).
				require.Equal(t, [latespans.NumLagBuckets]int64{1: 2, 2: 2, 5: 1, 9: 1, 11: 2}, lag)
			})
		}
	}
}

// Exact totals, as a property: whatever the policy, slacks and end times, every edge is
// counted once across the on-time series, the late series and the dropped edges, and an edge
// is on time exactly when both its spans end within the slacks.
func TestLateSpansExactTotals(t *testing.T) {
	rnd := newCallGraph(5).rng
	for round := range 9 {
		policy := []string{latespans.PolicyCountNow, latespans.PolicyDrop, latespans.PolicySeparate}[round%3]
		slack := time.Duration(1+rnd.IntN(600)) * time.Second
		future := time.Duration(1+rnd.IntN(120)) * time.Second
		t.Run(fmt.Sprintf("%d/%s", round, policy), func(t *testing.T) {
			c, sink := startLate(t, LateSpansConfig{Policy: policy, Slack: slack, FutureSlack: future})
			n := 50 + rnd.IntN(200)
			onTime := 0
			end := func() time.Duration {
				if rnd.IntN(8) == 0 {
					return []time.Duration{-slack, future}[rnd.IntN(2)] // on an edge: on time
				}
				return time.Duration(rnd.Int64N(int64(40*time.Minute))) - 30*time.Minute
			}
			inSlack := func(d time.Duration) bool { return d >= -slack && d <= future }
			for i := range n {
				cEnd, sEnd := end(), end()
				if inSlack(cEnd) && inSlack(sEnd) {
					onTime++
				}
				trace := pcommon.TraceID{byte(i), byte(i >> 8), 9}
				client := oneSpan(fmt.Sprint("c", i%3), ptrace.SpanKindClient, 0, 1, 0, func(s ptrace.Span) {
					s.SetTraceID(trace)
					endingAt(cEnd)(s)
				})
				server := oneSpan(fmt.Sprint("s", i%4), ptrace.SpanKindServer, 0, 2, 1, func(s ptrace.Span) {
					s.SetTraceID(trace)
					endingAt(sEnd)(s)
				})
				if rnd.IntN(2) == 0 {
					client, server = server, client
				}
				if rnd.IntN(2) == 0 {
					client = wireEncodings[rnd.IntN(len(wireEncodings))](t, client)
				}
				consume(t, c, client, server)
			}
			require.NoError(t, c.Shutdown(context.Background()))
			got, late := lateTotals(t, lastFlush(t, sink))
			var gotOnTime int64
			for _, v := range got {
				gotOnTime += v
			}
			outside := c.tel.lateEdges.Load()
			require.EqualValues(t, n-onTime, outside, "edges with a half outside the slack")
			var dropped int64
			switch policy {
			case latespans.PolicyCountNow:
				require.EqualValues(t, n, gotOnTime)
			case latespans.PolicyDrop:
				dropped = outside
				require.EqualValues(t, onTime, gotOnTime)
			case latespans.PolicySeparate:
				require.EqualValues(t, onTime, gotOnTime)
				require.Equal(t, outside, late)
			}
			require.EqualValues(t, n, gotOnTime+late+dropped, "every edge once")
			var lagged int64
			for i := range latespans.NumLagBuckets {
				lagged += c.tel.late.Lag[i].Load()
			}
			require.EqualValues(t, 2*n, lagged, "every edge span's lag")
		})
	}
}

// late_spans errors name the key; the defaults are Tempo's 30s both ways, counted as now.
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
