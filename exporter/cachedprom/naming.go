package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	prometheustranslator "github.com/open-telemetry/opentelemetry-collector-contrib/pkg/translator/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Resource attributes the prometheus exporter maps to job and instance.
const (
	attrServiceName       = "service.name"
	attrServiceNamespace  = "service.namespace"
	attrServiceInstanceID = "service.instance.id"
)

// namer turns OTLP names into Prometheus names exactly as the prometheus
// exporter does: the same otlptranslator namers, configured from the same
// keys. The results are memoised because the same few metric and attribute
// names come back in every batch.
type namer struct {
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

func newNamer(cfg *Config, g gates) *namer {
	withSuffixes, utf8Allowed := cfg.translation(g.ignoreAddMetricSuffixes)
	n := &namer{
		metric: otlptranslator.MetricNamer{
			WithMetricSuffixes: withSuffixes,
			Namespace:          cfg.Namespace,
			UTF8Allowed:        utf8Allowed,
		},
		label: otlptranslator.LabelNamer{
			UTF8Allowed: utf8Allowed,
			// The stock exporter keeps runs of underscores (a..b becomes
			// a__b). It used to derive this from the
			// pkg.translator.prometheus.PermissiveLabelSanitization gate
			// (alpha, off: kept); the gate is stable (on) now and no longer
			// read, and reading it would merge them.
			PreserveMultipleUnderscores: true,
		},
		escape:      utf8Allowed,
		metricNames: map[metricNameKey]nameResult{},
		labelNames:  map[string]nameResult{},
	}
	if cfg.Namespace != "" {
		// Like the stock exporter, an unusable namespace is ignored for
		// target_info (the metric namer reports its own error).
		if ns, err := n.label.Build(cfg.Namespace); err == nil {
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

func (n *namer) metricName(m pmetric.Metric) (string, error) {
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

func (n *namer) labelName(attr string) (string, error) {
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

func (n *namer) targetInfoName() string {
	if n.namespace != "" {
		return n.namespace + "_" + prometheustranslator.TargetInfoMetricName
	}
	return prometheustranslator.TargetInfoMetricName
}

func extractJob(attrs pcommon.Map) (string, bool) {
	name, ok := attrs.Get(attrServiceName)
	if !ok {
		return "", false
	}
	if ns, ok := attrs.Get(attrServiceNamespace); ok {
		return ns.AsString() + "/" + name.AsString(), true
	}
	return name.AsString(), true
}

func extractInstance(attrs pcommon.Map) (string, bool) {
	if inst, ok := attrs.Get(attrServiceInstanceID); ok {
		return inst.AsString(), true
	}
	return "", false
}

// labelPair is one Prometheus label of a series. typ is the OTLP value type
// of an attribute (part of its identity); origin decides which label wins
// when two have the same name.
type labelPair struct {
	name, value string
	typ         uint8
	origin      uint8
}

// Label origins, in the order they win a name collision.
const (
	originAttr  uint8 = iota // data point attribute
	originScope              // scope, job and instance labels
	originConst              // const_labels: yields to the series' own labels
)

// appendLabels renders sorted pairs as `a="x",b="y"`, escaped for both the
// text and the OpenMetrics format (they escape label values alike).
func appendLabels(dst []byte, pairs []labelPair) []byte {
	for i, p := range pairs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendName(dst, p.name)
		dst = append(dst, '=', '"')
		dst = appendEscaped(dst, p.value, true)
		dst = append(dst, '"')
	}
	return dst
}

// appendName writes a name bare when it is a legacy name, quoted otherwise,
// as expfmt does.
func appendName(dst []byte, name string) []byte {
	if model.LegacyValidation.IsValidMetricName(name) {
		return append(dst, name...)
	}
	dst = append(dst, '"')
	dst = appendEscaped(dst, name, true)
	return append(dst, '"')
}

// appendEscaped escapes '\' and newline, and '"' when quote is set: the
// escaping of expfmt for label values (quote) and text-format HELP (no quote).
func appendEscaped(dst []byte, s string, quote bool) []byte {
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
