// Package gates reads feature gates that another component registers. Our components follow
// the gates of the stock components they replace, by the stock IDs, so that
// `--feature-gates=...` switches both alike; registering those IDs ourselves would panic
// beside the stock component (otelcol-red builds it in), and IDs of our own would be a second
// set of flags to learn. A binary without the stock component does not register the gate:
// it then reads as its default in the stock release we follow.
package gates // import "github.com/otelcol-red/otelcol-red/internal/gates"

import "go.opentelemetry.io/collector/featuregate"

// Enabled reports whether gate id of the global registry is enabled; def when it is not
// registered. Read once when a component is built: a gate changes only at startup, and ingest
// never looks one up.
func Enabled(id string, def bool) bool { return EnabledIn(featuregate.GlobalRegistry(), id, def) }

// EnabledIn is Enabled on registry reg.
func EnabledIn(reg *featuregate.Registry, id string, def bool) bool {
	enabled := def
	reg.VisitAll(func(g *featuregate.Gate) {
		if g.ID() == id {
			enabled = g.IsEnabled()
		}
	})
	return enabled
}
