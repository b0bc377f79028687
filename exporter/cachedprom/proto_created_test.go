package cachedprom

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
)

// createdTimes renders the protobuf body of batches and returns, per
// family, the created timestamp of its only series (zero time for none).
func createdTimes(t *testing.T, batches ...pmetric.Metrics) map[string]time.Time {
	t.Helper()
	_, pb, _, _ := renderBoth(createDefaultConfig().(*Config), batches...)
	out := map[string]time.Time{}
	for _, mf := range promtest.DecodeProto(t, pb) {
		if mf.GetName() == "target_info" {
			continue
		}
		require.Len(t, mf.Metric, 1, mf.GetName())
		var ct time.Time
		if ts := createdOf(mf.Metric[0]); ts != nil {
			ct = ts.AsTime()
		}
		out[mf.GetName()] = ct
	}
	return out
}

// TestProtoCreatedTimestamps: counters and explicit histograms carry the
// start time of what they count as their created timestamp: a cumulative
// point's own start (a restart brings a new one), the first delta's start
// however many deltas were added (also after a gap between them), and none
// for a start at or before the Unix epoch.
func TestProtoCreatedTimestamps(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 123_000_000).UTC()
	const calls, duration = "traces_span_metrics_calls_total", "traces_span_metrics_duration_milliseconds"
	both := func(want time.Time, got map[string]time.Time, what string) {
		t.Helper()
		require.Contains(t, got, calls)
		require.Contains(t, got, duration)
		assert.True(t, want.Equal(got[calls]), "%s: counter created %v, want %v", what, got[calls], want)
		assert.True(t, want.Equal(got[duration]), "%s: histogram created %v, want %v", what, got[duration], want)
	}

	both(t0, createdTimes(t, redBatch(false, t0, t0.Add(time.Minute), 3, "a")), "cumulative")
	both(t0.Add(time.Hour), createdTimes(t,
		redBatch(false, t0, t0.Add(time.Minute), 3, "a"),
		redBatch(false, t0.Add(time.Hour), t0.Add(time.Hour+time.Minute), 1, "a"),
	), "cumulative after a restart")
	both(t0, createdTimes(t,
		redBatch(true, t0, t0.Add(time.Minute), 3, "a"),
		redBatch(true, t0.Add(time.Minute), t0.Add(2*time.Minute), 3, "a"),
		redBatch(true, t0.Add(5*time.Minute), t0.Add(6*time.Minute), 3, "a"), // after a gap
	), "deltas")
	both(time.Time{}, createdTimes(t, redBatch(false, time.Unix(0, 0), t0, 3, "a")), "start at the epoch")
	both(time.Time{}, createdTimes(t, redBatch(true, time.Unix(0, 500), t0, 3, "a")), "start within the epoch's first second")
}
