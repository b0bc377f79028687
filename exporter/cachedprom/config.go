package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/resourcetotelemetry"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
)

// Config is the cachedprom configuration. Every key of the prometheus
// exporter is accepted with the same meaning, so a stock configuration keeps
// working when the exporter type is renamed; path, render_interval and
// max_series are cachedprom's own.
type Config struct {
	// ServerConfig is the HTTP server serving the scrape endpoint: endpoint
	// (default localhost:9464), tls, auth, cors and the other confighttp keys.
	confighttp.ServerConfig `mapstructure:",squash"`

	// QueueBatchConfig is the exporterhelper sending queue. Ingest is cheap, so
	// it is off unless configured; it exists so stock configurations load.
	QueueBatchConfig configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`

	// Namespace, when set, prefixes every metric name (and target_info) with
	// "<namespace>_". Empty means no prefix.
	Namespace string `mapstructure:"namespace"`

	// ConstLabels are added to every exported series except target_info. Empty
	// means none.
	ConstLabels map[string]string `mapstructure:"const_labels"`

	// SendTimestamps writes each sample's OTLP timestamp into the exposition.
	// Default false: Prometheus stamps samples with the scrape time.
	SendTimestamps bool `mapstructure:"send_timestamps"`

	// MetricExpiration is how long a series is kept after its last update. It is
	// enforced by a timer, whether or not anybody scrapes. Default 5m; zero
	// expires a series at the first sweep after its update.
	MetricExpiration time.Duration `mapstructure:"metric_expiration"`

	// ResourceToTelemetrySettings copies resource attributes onto every data
	// point (hence into labels): all of them with enabled, less the three
	// that make job and instance with exclude_service_attributes, or those
	// that included and excluded select, as under resource_constant_labels.
	// Default disabled. It cannot be set beside resource_constant_labels, and
	// the exporter.prometheus.DisableResourceToTelemetryConversion feature
	// gate refuses it.
	//
	// Deprecated: use ResourceConstantLabels, as in the prometheus exporter.
	ResourceToTelemetrySettings resourcetotelemetry.Settings `mapstructure:"resource_to_telemetry_conversion"`

	// ResourceConstantLabels adds resource attributes to every series of
	// their resource as labels: those whose key matches a pattern of included
	// and none of excluded (wildcards * and ?); excluded alone selects every
	// attribute it does not match. enabled and exclude_service_attributes are
	// refused here. Default none: resource attributes are on target_info only.
	ResourceConstantLabels resourcetotelemetry.Settings `mapstructure:"resource_constant_labels"`

	// EnableOpenMetrics also renders an OpenMetrics 1.0 body, served to clients
	// that ask for it. Default false: text 0.0.4 only, as the prometheus exporter.
	EnableOpenMetrics bool `mapstructure:"enable_open_metrics"`

	// WithoutScopeInfo drops the otel_scope_* labels. Default false.
	WithoutScopeInfo bool `mapstructure:"without_scope_info"`

	// AddMetricSuffixes adds type and unit suffixes (_total, _seconds, ...) to
	// metric names. Default true. Ignored when translation_strategy is set,
	// and always while the exporter.prometheusexporter.DisableAddMetricSuffixes
	// feature gate is enabled, which it is by default (beta): names then get
	// suffixes unless translation_strategy says otherwise.
	//
	// Deprecated: use TranslationStrategy, as in the prometheus exporter.
	AddMetricSuffixes bool `mapstructure:"add_metric_suffixes"`

	// TranslationStrategy chooses how OTLP names become Prometheus names:
	// UnderscoreEscapingWithSuffixes, UnderscoreEscapingWithoutSuffixes,
	// NoUTF8EscapingWithSuffixes or NoTranslation. Empty means
	// UnderscoreEscapingWithSuffixes (or, with the
	// DisableAddMetricSuffixes gate disabled, "decide from
	// add_metric_suffixes").
	TranslationStrategy translationStrategy `mapstructure:"translation_strategy"`

	// Path is the HTTP path serving the exposition. Default /metrics.
	Path string `mapstructure:"path"`

	// RenderInterval is the debounce of the renderer: after an update, the
	// snapshot is rebuilt at most once per interval, once ingest paused for a
	// quarter of it (at the latest four intervals after the update), and
	// after a render the renderer idles at least as long as that render's
	// processor time, so rendering uses at most half a core on average.
	// Default 1s.
	RenderInterval time.Duration `mapstructure:"render_interval"`

	// MaxSeries caps the label sets kept: one per RED series, shared by its
	// calls counter and duration histogram, the unit of tracemetrics'
	// max_series. A data point that would create a label set beyond the cap
	// is added to its family's overflow series (label
	// otel_metric_overflow="true") instead, so totals stay exact; such points
	// are counted and logged once per render interval. Zero means no cap.
	// Default 1001000: above tracemetrics' cap (default or raised up to 1M)
	// plus its overflow series, so that tracemetrics' overflow governs.
	MaxSeries int `mapstructure:"max_series"`

	// MaxConcurrentScrapes bounds the scrapes served at once; one more is
	// answered 503 at once, as promhttp's MaxRequestsInFlight does. A scrape
	// without gzip of a large body inflates it (a CPU burst per scrape), so
	// a flood of them must not pile up. Zero means no limit. Default 16.
	MaxConcurrentScrapes int `mapstructure:"max_concurrent_scrapes"`

	// MinScrapeInterval spaces the scrapes served to one client address: a
	// GET arriving sooner after the same address's previous one waits for
	// the rest of the interval, then gets the current snapshot. Sending a
	// large body is most of what a scrape costs the collector, and a client
	// scraping in a loop would otherwise take that cost from ingest many
	// times a second; Prometheus, asking once per scrape_interval, never
	// waits. Behind a proxy every client shares the proxy's address. Zero
	// means no pacing. Default 250ms.
	MinScrapeInterval time.Duration `mapstructure:"min_scrape_interval"`

	// NativeHistograms configures how exponential histograms are served.
	NativeHistograms NativeHistogramsConfig `mapstructure:"native_histograms"`
}

// NativeHistogramsConfig configures how exponential histograms, which the
// protobuf exposition serves as native histograms, appear in the text
// formats.
type NativeHistogramsConfig struct {
	// ClassicFallback renders an exponential histogram in text and
	// OpenMetrics as a classic histogram: one `le` bucket per bucket of
	// its native histogram, at the native schema's boundaries, with exact
	// cumulative counts (internal/render/classic.go), for clients that cannot take
	// the protobuf exposition. Off, text clients get `_count`, `_sum` and
	// the `+Inf` bucket only, as from the stock exporter. Default false.
	ClassicFallback bool `mapstructure:"classic_fallback"`
}

type translationStrategy string

const (
	underscoreEscapingWithSuffixes    translationStrategy = "UnderscoreEscapingWithSuffixes"
	underscoreEscapingWithoutSuffixes translationStrategy = "UnderscoreEscapingWithoutSuffixes"
	noUTF8EscapingWithSuffixes        translationStrategy = "NoUTF8EscapingWithSuffixes"
	noTranslation                     translationStrategy = "NoTranslation"
)

var _ component.Config = (*Config)(nil)

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	var errs []error
	switch cfg.TranslationStrategy {
	case "", underscoreEscapingWithSuffixes, underscoreEscapingWithoutSuffixes, noUTF8EscapingWithSuffixes, noTranslation:
	default:
		errs = append(errs, fmt.Errorf("invalid translation_strategy: %s", cfg.TranslationStrategy))
	}
	// The nested settings' own Validate (patterns, legacy keys beside
	// patterns) runs with the rest of the configuration's, under their key.
	if cfg.ResourceConstantLabels.Enabled || cfg.ResourceConstantLabels.ExcludeServiceAttributes {
		errs = append(errs, errors.New("resource_constant_labels: enabled and exclude_service_attributes are not supported; use included and excluded"))
	}
	if !cfg.ResourceToTelemetrySettings.IsEmpty() {
		if readGates().noResourceToTelemetry {
			errs = append(errs, errors.New("resource_to_telemetry_conversion is disabled by the "+
				disableResourceToTelemetryConversionGate+" feature gate; use resource_constant_labels"))
		} else if !cfg.ResourceConstantLabels.IsEmpty() {
			errs = append(errs, errors.New("resource_to_telemetry_conversion and resource_constant_labels cannot both be set; resource_to_telemetry_conversion is deprecated"))
		}
	}
	if strings.TrimSpace(cfg.NetAddr.Endpoint) == "" {
		errs = append(errs, errors.New("endpoint must not be empty"))
	}
	if err := validatePath(cfg.Path); err != nil {
		errs = append(errs, err)
	}
	if cfg.RenderInterval <= 0 {
		errs = append(errs, errors.New("render_interval must be greater than 0"))
	}
	if cfg.MaxSeries < 0 {
		errs = append(errs, errors.New("max_series must not be negative"))
	}
	if cfg.MaxConcurrentScrapes < 0 {
		errs = append(errs, errors.New("max_concurrent_scrapes must not be negative"))
	}
	if cfg.MinScrapeInterval < 0 {
		errs = append(errs, errors.New("min_scrape_interval must not be negative"))
	}
	if cfg.MetricExpiration < 0 {
		errs = append(errs, errors.New("metric_expiration must not be negative"))
	}
	for name := range cfg.ConstLabels {
		// client_golang rejects such names when building the metric
		// descriptor, which would silently drop every series: fail early.
		if !model.LabelName(name).IsValid() || strings.HasPrefix(name, model.ReservedLabelPrefix) {
			errs = append(errs, fmt.Errorf("const_labels: invalid label name %q", name))
		}
	}
	return errors.Join(errs...)
}

// validatePath accepts a literal absolute path that http.ServeMux can
// register: its pattern syntax (a method or host prefix, {wildcards},
// spaces) would otherwise change the meaning of the path or make Start
// panic.
func validatePath(path string) (err error) {
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("path must start with '/', got %q", path)
	}
	if strings.ContainsAny(path, "{} \t\r\n") {
		return fmt.Errorf("path must be a literal URL path without spaces or braces, got %q", path)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("path %q cannot be served: %v", path, r)
		}
	}()
	http.NewServeMux().Handle(path, http.NotFoundHandler())
	return nil
}

// translation returns (add suffixes, allow UTF-8) as the prometheus exporter
// derives them; ignoreAddMetricSuffixes is the DisableAddMetricSuffixes gate.
func (cfg *Config) translation(ignoreAddMetricSuffixes bool) (withSuffixes, utf8Allowed bool) {
	switch cfg.TranslationStrategy {
	case underscoreEscapingWithSuffixes:
		return true, false
	case underscoreEscapingWithoutSuffixes:
		return false, false
	case noUTF8EscapingWithSuffixes:
		return true, true
	case noTranslation:
		return false, true
	}
	if ignoreAddMetricSuffixes {
		return true, false
	}
	return cfg.AddMetricSuffixes, false
}

// resourceLabels returns the settings that put resource attributes on
// series, as the prometheus exporter picks them: resource_constant_labels
// when set, else the deprecated resource_to_telemetry_conversion unless the
// DisableResourceToTelemetryConversion gate is enabled (noLegacy); legacy
// reports that the deprecated key was taken.
func (cfg *Config) resourceLabels(noLegacy bool) (set resourcetotelemetry.Settings, legacy bool) {
	if cfg.ResourceConstantLabels.IsEmpty() && !noLegacy && !cfg.ResourceToTelemetrySettings.IsEmpty() {
		return cfg.ResourceToTelemetrySettings, true
	}
	return cfg.ResourceConstantLabels, false
}
