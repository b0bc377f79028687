package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	prometheustranslator "github.com/open-telemetry/opentelemetry-collector-contrib/pkg/translator/prometheus"
	"go.opentelemetry.io/collector/featuregate"
)

// The prometheus exporter (v0.165.1) changes its configuration and output
// through feature gates. cachedprom follows them by the stock IDs, so
// `--feature-gates=...` switches both exporters alike. The exporter's own
// gates are registered by its package, which otelcol-red builds in;
// registering the same IDs here would panic beside it, and IDs of our own
// would be a second set of flags to learn. Unregistered (a binary without
// the stock exporter), a gate reads as its stage's default in v0.165.1.
const (
	// disableAddMetricSuffixesGate (beta, on by default): add_metric_suffixes
	// is ignored; without translation_strategy, names get suffixes.
	disableAddMetricSuffixesGate = "exporter.prometheusexporter.DisableAddMetricSuffixes"
	// disableResourceToTelemetryConversionGate (alpha): the deprecated
	// resource_to_telemetry_conversion key is refused; resource_constant_labels
	// is the only way to put resource attributes on series.
	disableResourceToTelemetryConversionGate = "exporter.prometheus.DisableResourceToTelemetryConversion"
)

// gateEnabled reports whether the gate id is enabled; unregistered, it is
// def, the gate's default in the stock exporter.
func gateEnabled(id string, def bool) bool {
	enabled := def
	featuregate.GlobalRegistry().VisitAll(func(g *featuregate.Gate) {
		if g.ID() == id {
			enabled = g.IsEnabled()
		}
	})
	return enabled
}

// gates is the value of every followed gate, read once when an exporter is
// built: a gate changes only at startup, and ingest never looks it up.
type gates struct {
	// ignoreAddMetricSuffixes: add_metric_suffixes has no effect.
	ignoreAddMetricSuffixes bool
	// noResourceToTelemetry: resource_to_telemetry_conversion is refused
	// (Validate) and never applied.
	noResourceToTelemetry bool
	// keepIdentifyingResourceAttrs (pkg.prometheus.KeepIdentifyingResourceAttributes,
	// alpha, registered by the translator package cachedprom imports):
	// target_info keeps service.name, service.namespace and
	// service.instance.id as labels beside job and instance.
	keepIdentifyingResourceAttrs bool
}

func readGates() gates {
	return gates{
		ignoreAddMetricSuffixes:      gateEnabled(disableAddMetricSuffixesGate, true),
		noResourceToTelemetry:        gateEnabled(disableResourceToTelemetryConversionGate, false),
		keepIdentifyingResourceAttrs: prometheustranslator.KeepIdentifyingResourceAttributesGate.IsEnabled(),
	}
}
