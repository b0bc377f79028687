package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import "github.com/otelcol-red/otelcol-red/internal/latespans"

// late_spans: what becomes of an edge whose spans end far from the time they are reduced, as
// after a Kafka backlog is drained. The keys, defaults and per-span check are shared with
// tracemetrics (internal/latespans); an edge is late when either of its spans is (each is
// judged against its own request's time), and the aggregator applies the policy when it
// records the edge: counted as now, dropped (counted in late_edges with outcome dropped), or
// recorded in a series marked late="true".

// LateSpansConfig is late_spans.
type LateSpansConfig = latespans.Config

// lateLabel, or'ed into an edge series key's label slot, marks a series of late edges
// (separate): part of the identity, so late and on-time requests of an edge never merge.
const lateLabel = 1 << 8
