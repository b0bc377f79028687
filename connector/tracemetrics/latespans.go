package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import "github.com/otelcol-red/otelcol-red/internal/latespans"

// LateSpansConfig is late_spans, the policy tracegraph applies too (internal/latespans): a span
// outside the slack is counted as now, dropped (counted in the late_spans telemetry with
// outcome dropped), or counted in series of its own marked late="true"
// (internal/series, IsLateKey).
type LateSpansConfig = latespans.Config
