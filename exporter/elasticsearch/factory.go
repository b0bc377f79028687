// Package elasticsearch is contrib's elasticsearch exporter as otelcol-red builds it in: the
// same component (type `elasticsearch`, every key, every behaviour), with one default supplied.
//
// The exporter is held at v0.157.0 (versions.txt: no newer release is served here), while the
// collector core is v0.165.0. Since v0.157.0 the core's sending queue grew a
// `batch::partition` block whose `idle_timeout` and `cache_size` must be positive; v0.157.0's
// default config builds its batch settings field by field and leaves that block zero, so on
// this core even its own default config fails `validate` ("partition: `idle_timeout` must be
// positive"), and so would every user's elasticsearch config. NewFactory wraps the upstream
// factory and fills the block with the core's defaults (exporterhelper.NewDefaultPartitionConfig:
// 10000 partitions, 90 s idle), which is what a user of the newer core gets from every exporter
// that takes its batch defaults from the core. A key the user sets still wins.
//
// Rejected: a config converter that writes the two keys into the user's YAML: it would have to
// know every elasticsearch exporter ID and would show keys in the effective config that the user
// never wrote. Remove this package when the hold is lifted.
package elasticsearch // import "github.com/otelcol-red/otelcol-red/exporter/elasticsearch"

import (
	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/elasticsearchexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/xexporter"
)

// NewFactory returns contrib's elasticsearch exporter factory with the core's partition defaults
// in its default sending queue.
func NewFactory() exporter.Factory {
	up := elasticsearchexporter.NewFactory().(xexporter.Factory)
	return xexporter.NewFactory(
		up.Type(),
		func() component.Config { return withPartitionDefaults(up.CreateDefaultConfig()) },
		xexporter.WithLogs(up.CreateLogs, up.LogsStability()),
		xexporter.WithMetrics(up.CreateMetrics, up.MetricsStability()),
		xexporter.WithTraces(up.CreateTraces, up.TracesStability()),
		xexporter.WithProfiles(up.CreateProfiles, up.ProfilesStability()),
	)
}

// withPartitionDefaults sets the default batch's partition settings when the upstream default
// leaves them zero. A queue or batch that is off by default stays off.
func withPartitionDefaults(c component.Config) component.Config {
	cfg := c.(*elasticsearchexporter.Config)
	if !cfg.QueueBatchConfig.HasValue() {
		return cfg
	}
	q := cfg.QueueBatchConfig.Get()
	if !q.Batch.HasValue() {
		return cfg
	}
	b := q.Batch.Get()
	def := exporterhelper.NewDefaultPartitionConfig()
	if b.Partition.IdleTimeout <= 0 {
		b.Partition.IdleTimeout = def.IdleTimeout
	}
	if b.Partition.CacheSize <= 0 {
		b.Partition.CacheSize = def.CacheSize
	}
	return cfg
}
