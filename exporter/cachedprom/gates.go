package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	prometheustranslator "github.com/open-telemetry/opentelemetry-collector-contrib/pkg/translator/prometheus"

	"github.com/otelcol-red/otelcol-red/internal/gates"
)

// The prometheus exporter (v0.165.1) changes its configuration and output
// through feature gates. cachedprom follows them by the stock IDs, so
// `--feature-gates=...` switches both exporters alike (internal/gates says
// why they are not registered here). Unregistered (a binary without the
// stock exporter), a gate reads as its stage's default in v0.165.1.
const (
	// disableAddMetricSuffixesGate (beta, on by default): add_metric_suffixes
	// is ignored; without translation_strategy, names get suffixes.
	disableAddMetricSuffixesGate = "exporter.prometheusexporter.DisableAddMetricSuffixes"
	// disableResourceToTelemetryConversionGate (alpha): the deprecated
	// resource_to_telemetry_conversion key is refused; resource_constant_labels
	// is the only way to put resource attributes on series.
	disableResourceToTelemetryConversionGate = "exporter.prometheus.DisableResourceToTelemetryConversion"
)

// followedGates is the value of every gate cachedprom follows, read once
// when an exporter is built: a gate changes only at startup, and ingest
// never looks it up.
type followedGates struct {
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

func readGates() followedGates {
	return followedGates{
		ignoreAddMetricSuffixes:      gates.Enabled(disableAddMetricSuffixesGate, true),
		noResourceToTelemetry:        gates.Enabled(disableResourceToTelemetryConversionGate, false),
		keepIdentifyingResourceAttrs: prometheustranslator.KeepIdentifyingResourceAttributesGate.IsEnabled(),
	}
}
