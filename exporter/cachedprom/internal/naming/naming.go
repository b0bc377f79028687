// Package naming turns OTLP names into Prometheus names and writes them, as
// the prometheus exporter does: the same otlptranslator namers, configured
// from the same keys, and the escaping of expfmt.
package naming // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/naming"

import (
	prometheustranslator "github.com/open-telemetry/opentelemetry-collector-contrib/pkg/translator/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Resource attributes the prometheus exporter maps to job and instance.
const (
	AttrServiceName       = "service.name"
	AttrServiceNamespace  = "service.namespace"
	AttrServiceInstanceID = "service.instance.id"
)

// Options are what the names depend on, as the prometheus exporter derives
// them from its configuration (translation_strategy, add_metric_suffixes and
// the feature gates, namespace).
type Options struct {
	// WithSuffixes adds `_total` and unit suffixes.
	WithSuffixes bool
	// UTF8Allowed keeps names that are not legacy Prometheus names; they
	// are served underscore-escaped all the same (see Namer).
	UTF8Allowed bool
	// Namespace prefixes every metric name, and target_info, with
	// `<namespace>_`; empty means none.
	Namespace string
}

// Namer names metrics and labels. The results are memoised because the same
// few metric and attribute names come back in every batch; it is not safe
// for concurrent use (the store calls it under its lock).
type Namer struct {
	metric    otlptranslator.MetricNamer
	label     otlptranslator.LabelNamer
	namespace string // normalised, for target_info
	// escape is set when UTF-8 names are allowed: the stock exporter's
	// promhttp handler then escapes names with underscores for every client
	// that does not ask for escaping=allow-utf-8, which is every Prometheus
	// release to date. We serve that form to everybody.
	escape bool

	metricNames map[metricNameKey]nameResult
	labelNames  map[string]nameResult
}

type metricNameKey struct {
	name, unit string
	typ        otlptranslator.MetricType
}

type nameResult struct {
	name string
	err  error
}

// New returns a namer for opts.
func New(opts Options) *Namer {
	n := &Namer{
		metric: otlptranslator.MetricNamer{
			WithMetricSuffixes: opts.WithSuffixes,
			Namespace:          opts.Namespace,
			UTF8Allowed:        opts.UTF8Allowed,
		},
		label: otlptranslator.LabelNamer{
			UTF8Allowed: opts.UTF8Allowed,
			// The stock exporter keeps runs of underscores (a..b becomes
			// a__b). It used to derive this from the
			// pkg.translator.prometheus.PermissiveLabelSanitization gate
			// (alpha, off: kept); the gate is stable (on) now and no longer
			// read, and reading it would merge them.
			PreserveMultipleUnderscores: true,
		},
		escape:      opts.UTF8Allowed,
		metricNames: map[metricNameKey]nameResult{},
		labelNames:  map[string]nameResult{},
	}
	if opts.Namespace != "" {
		// Like the stock exporter, an unusable namespace is ignored for
		// target_info (the metric namer reports its own error).
		if ns, err := n.label.Build(opts.Namespace); err == nil {
			n.namespace = ns
		}
	}
	return n
}

func translatorType(m pmetric.Metric) otlptranslator.MetricType {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return otlptranslator.MetricTypeGauge
	case pmetric.MetricTypeSum:
		if m.Sum().IsMonotonic() {
			return otlptranslator.MetricTypeMonotonicCounter
		}
		return otlptranslator.MetricTypeNonMonotonicCounter
	case pmetric.MetricTypeSummary:
		return otlptranslator.MetricTypeSummary
	case pmetric.MetricTypeHistogram:
		return otlptranslator.MetricTypeHistogram
	case pmetric.MetricTypeExponentialHistogram:
		return otlptranslator.MetricTypeExponentialHistogram
	}
	return otlptranslator.MetricTypeUnknown
}

// MetricName is the Prometheus name of metric m, or the translator's error
// for a name it refuses.
func (n *Namer) MetricName(m pmetric.Metric) (string, error) {
	key := metricNameKey{name: m.Name(), unit: m.Unit(), typ: translatorType(m)}
	if r, ok := n.metricNames[key]; ok {
		return r.name, r.err
	}
	name, err := n.metric.Build(otlptranslator.Metric{Name: key.name, Unit: key.unit, Type: key.typ})
	if err == nil && n.escape {
		name = model.EscapeName(name, model.UnderscoreEscaping)
	}
	if len(n.metricNames) > 100_000 {
		clear(n.metricNames) // bound the memo against unbounded name churn
	}
	n.metricNames[key] = nameResult{name, err}
	return name, err
}

// LabelName is the Prometheus label name of attribute attr, or the
// translator's error for a name it refuses.
func (n *Namer) LabelName(attr string) (string, error) {
	if r, ok := n.labelNames[attr]; ok {
		return r.name, r.err
	}
	name, err := n.label.Build(attr)
	if err == nil && n.escape {
		name = model.EscapeName(name, model.UnderscoreEscaping)
	}
	if len(n.labelNames) > 100_000 {
		clear(n.labelNames)
	}
	n.labelNames[attr] = nameResult{name, err}
	return name, err
}

// TargetInfoName is the name of the target_info family. It never changes,
// so it may be called without the lock.
func (n *Namer) TargetInfoName() string {
	if n.namespace != "" {
		return n.namespace + "_" + prometheustranslator.TargetInfoMetricName
	}
	return prometheustranslator.TargetInfoMetricName
}

// Job is the job label of a resource: [service.namespace/]service.name,
// false without a service.name.
func Job(attrs pcommon.Map) (string, bool) {
	name, ok := attrs.Get(AttrServiceName)
	if !ok {
		return "", false
	}
	if ns, ok := attrs.Get(AttrServiceNamespace); ok {
		return ns.AsString() + "/" + name.AsString(), true
	}
	return name.AsString(), true
}

// Instance is the instance label of a resource: service.instance.id, false
// without one.
func Instance(attrs pcommon.Map) (string, bool) {
	if inst, ok := attrs.Get(AttrServiceInstanceID); ok {
		return inst.AsString(), true
	}
	return "", false
}

// AppendLabel writes the label `name="value"`, escaped for both the text and
// the OpenMetrics format (they escape label values alike).
func AppendLabel(dst []byte, name, value string) []byte {
	dst = AppendName(dst, name)
	dst = append(dst, '=', '"')
	dst = AppendEscaped(dst, value, true)
	return append(dst, '"')
}

// AppendName writes a name bare when it is a legacy name, quoted otherwise,
// as expfmt does.
func AppendName(dst []byte, name string) []byte {
	if model.LegacyValidation.IsValidMetricName(name) {
		return append(dst, name...)
	}
	dst = append(dst, '"')
	dst = AppendEscaped(dst, name, true)
	return append(dst, '"')
}

// AppendEscaped escapes '\' and newline, and '"' when quote is set: the
// escaping of expfmt for label values (quote) and text-format HELP (no quote).
func AppendEscaped(dst []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '"':
			if quote {
				dst = append(dst, '\\', '"')
			} else {
				dst = append(dst, c)
			}
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
