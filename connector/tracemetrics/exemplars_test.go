package tracemetrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// With exemplars.slow_threshold an exemplar names only a span the Elasticsearch branch's filter
// keeps: an error, or a span of at least the threshold (exactly the threshold included); a fast
// successful span, or one ending before it starts, is never named. The events metric names the
// same spans.
func TestExemplarsOnlyOfStoredSpans(t *testing.T) {
	const threshold = 500 * time.Millisecond
	for _, source := range []string{"pdata", "wire"} {
		t.Run(source, func(t *testing.T) {
			r := startConnector(t, NewFactory(), map[string]any{
				"exemplars":               map[string]any{"enabled": true, "max_per_data_point": 10, "slow_threshold": threshold.String()},
				"events":                  map[string]any{"enabled": true, "dimensions": dims("exception.type")},
				"aggregation_temporality": "AGGREGATION_TEMPORALITY_DELTA",
			})
			td := ptrace.NewTraces()
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", "checkout")
			spans := rs.ScopeSpans().AppendEmpty().Spans()
			base := pcommon.NewTimestampFromTime(time.Unix(1_700_000_000, 0))
			add := func(id byte, d time.Duration, failed bool) {
				sp := spans.AppendEmpty()
				sp.SetName("pay")
				sp.SetKind(ptrace.SpanKindServer)
				sp.SetTraceID(pcommon.TraceID{0x7, id})
				sp.SetSpanID(pcommon.SpanID{0x5, id})
				sp.SetStartTimestamp(base)
				sp.SetEndTimestamp(pcommon.Timestamp(int64(base) + int64(d)))
				if failed {
					// Errors are their own series (status.code), as the branch keeps them all.
					sp.Status().SetCode(ptrace.StatusCodeError)
				}
				sp.Events().AppendEmpty().SetName("exception")
			}
			add(1, 50*time.Millisecond, false)       // fast: not stored, not named
			add(2, threshold-time.Nanosecond, false) // just under: not named
			add(3, threshold, false)                 // exactly the threshold: stored, named
			add(4, 2*time.Second, false)             // slow: named
			add(5, -time.Second, false)              // ends before it starts: 0 s, not slow
			add(6, time.Millisecond, true)           // failed and fast: named
			add(7, -time.Second, true)               // failed, clocks apart: named
			if source == "wire" {
				td = wireEncodings[0].enc(t, td)
			}
			r.consume(td)
			named := map[string][]string{}
			for key, p := range points(t, settledFlush(t, r), false) {
				// An exemplar reads trace/span/value; the span ID's second byte is add's id.
				for _, e := range p.Exemplars {
					span := strings.Split(e, "/")[1]
					named[metricOf(key)+" "+statusOf(key)] = append(named[metricOf(key)+" "+statusOf(key)], span[2:4])
				}
			}
			want := map[string][]string{}
			for _, m := range []string{"traces.span.metrics.calls", "traces.span.metrics.duration", "traces.span.metrics.events"} {
				want[m+" STATUS_CODE_UNSET"] = []string{"03", "04"}
				want[m+" STATUS_CODE_ERROR"] = []string{"06", "07"}
			}
			require.Equal(t, want, named)
		})
	}
}

// With a threshold, the exemplars are those a connector without one chooses among the stored
// spans alone: the same candidates offered in the same order, on every metric, pdata or wire,
// for any bound on their number; data points of series without a stored span have none.
func TestExemplarsWithThresholdChooseAmongStoredSpans(t *testing.T) {
	const threshold = 40 * time.Millisecond
	for _, limit := range []int{1, 5, 255} {
		for _, source := range []string{"pdata", "wire"} {
			t.Run(fmt.Sprintf("%d/%s", limit, source), func(t *testing.T) {
				cfg := func(slow time.Duration) map[string]any {
					return map[string]any{
						"exemplars":               map[string]any{"enabled": true, "max_per_data_point": limit, "slow_threshold": slow.String()},
						"events":                  map[string]any{"enabled": true, "dimensions": dims("exception.type")},
						"dimensions":              dims("http.method"),
						"aggregation_temporality": "AGGREGATION_TEMPORALITY_DELTA",
					}
				}
				withThreshold := startConnector(t, NewFactory(), cfg(threshold))
				storedOnly := startConnector(t, NewFactory(), cfg(0))
				rnd := newRand(41)
				named, stored := 0, 0
				for i := range 6 {
					td := genTraces(rnd, 300, genOptions{services: 3, names: 4, events: true})
					kept := ptrace.NewTraces()
					td.CopyTo(kept)
					kept.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
						rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
							ss.Spans().RemoveIf(func(sp ptrace.Span) bool {
								// The store branch's filter condition, as configs/kafka-gateway.yaml writes it.
								drop := sp.Status().Code() != ptrace.StatusCodeError &&
									int64(sp.EndTimestamp())-int64(sp.StartTimestamp()) < int64(threshold)
								if !drop {
									stored++
								}
								return drop
							})
							return ss.Spans().Len() == 0
						})
						return rs.ScopeSpans().Len() == 0
					})
					if source == "wire" {
						td = wireEncodings[i%len(wireEncodings)].enc(t, td)
					}
					withThreshold.consume(td)
					storedOnly.consume(kept)
				}
				got, want := points(t, settledFlush(t, withThreshold), false), points(t, settledFlush(t, storedOnly), false)
				require.Positive(t, stored)
				require.Greater(t, len(got), len(want), "some series had no stored span")
				for key, p := range got {
					if w, ok := want[key]; ok {
						require.Equal(t, w.Exemplars, p.Exemplars, key)
					} else {
						require.Empty(t, p.Exemplars, key)
					}
					named += len(p.Exemplars)
				}
				require.Positive(t, named)
			})
		}
	}
}

// metricOf and statusOf read a key of points: resource|metric|...|attributes.
func metricOf(key string) string {
	return strings.Split(key, "|")[1]
}

func statusOf(key string) string {
	for _, c := range []string{"STATUS_CODE_UNSET", "STATUS_CODE_ERROR", "STATUS_CODE_OK"} {
		if strings.Contains(key, `"`+c+`"`) {
			return c
		}
	}
	return ""
}
