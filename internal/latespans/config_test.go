package latespans

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
)

// Every error names its YAML key under the prefix the connector passes, all of them joined.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		raw  map[string]any
		want string
	}{
		{map[string]any{"policy": "later"}, `late_spans.policy: "later", use "count_now", "drop" or "separate"`},
		{map[string]any{"slack": "-1s"}, "late_spans.slack: -1s, must be positive or 0 (default 30s)"},
		{map[string]any{"future_slack": "-2s"}, "late_spans.future_slack: -2s, must be positive or 0 (default 30s)"},
		{
			map[string]any{"policy": "DROP", "slack": "-1ns", "future_slack": "-1m"},
			`late_spans.policy: "DROP", use "count_now", "drop" or "separate"` + "\n" +
				"late_spans.slack: -1ns, must be positive or 0 (default 30s)\n" +
				"late_spans.future_slack: -1m0s, must be positive or 0 (default 30s)",
		},
	} {
		cfg := DefaultConfig()
		require.NoError(t, confmap.NewFromStringMap(tc.raw).Unmarshal(&cfg))
		require.EqualError(t, cfg.Validate("late_spans"), tc.want)
	}
	cfg := Config{Policy: "x"}
	require.ErrorContains(t, cfg.Validate("connectors.a.late_spans"), "connectors.a.late_spans.policy: ")

	for _, ok := range []Config{{}, DefaultConfig(), {Policy: PolicyDrop, Slack: time.Hour}, {Policy: PolicySeparate, FutureSlack: 1}} {
		require.NoError(t, ok.Validate("late_spans"), "%+v", ok)
	}
}

// The default is counted as now, Tempo's 30s both ways; 0 and empty mean the defaults.
func TestResolve(t *testing.T) {
	def := DefaultConfig()
	require.Equal(t, Config{Policy: "count_now", Slack: 30 * time.Second, FutureSlack: 30 * time.Second}, def)
	want := Policy{Mode: CountNow, Behind: int64(30 * time.Second), Ahead: int64(30 * time.Second)}
	require.Equal(t, want, def.Resolve())
	require.Equal(t, want, (&Config{}).Resolve())

	for policy, mode := range map[string]Mode{"": CountNow, PolicyCountNow: CountNow, PolicyDrop: Drop, PolicySeparate: Separate} {
		c := Config{Policy: policy, Slack: time.Minute, FutureSlack: 2 * time.Second}
		require.Equal(t, Policy{Mode: mode, Behind: int64(time.Minute), Ahead: int64(2 * time.Second)}, c.Resolve(), policy)
	}
}
