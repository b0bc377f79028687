package kafkaaffinity // import "github.com/otelcol-red/otelcol-red/exporter/kafkaaffinity"

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/kafka/configkafka"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
)

const (
	encodingProto = "otlp_proto"
	encodingJSON  = "otlp_json"
	keyByResource = "resource"
	keyByTraceID  = "trace_id"
	// maxFanout bounds fan-out: a key spread over more partitions than a
	// topic usually has brings back the copies affinity removes.
	maxFanout = 256
)

var _ component.Config = (*Config)(nil)

// Config is the kafkaaffinity exporter configuration. The Kafka client,
// producer, queue, retry and timeout keys are the stock kafka exporter's
// (v0.165.1, configkafka); the stock exporter's own keys are refused by
// Validate (unsupportedKeys).
type Config struct {
	// TimeoutSettings bounds one produce call (`timeout`, default 5s).
	TimeoutSettings exporterhelper.TimeoutConfig `mapstructure:",squash"`
	// QueueBatchConfig is the exporterhelper sending queue (`sending_queue`);
	// it holds requests while the brokers are unreachable.
	QueueBatchConfig configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	// BackOffConfig retries a request whose records were not all acknowledged
	// (`retry_on_failure`).
	configretry.BackOffConfig `mapstructure:"retry_on_failure"`
	// ClientConfig holds brokers, client_id, protocol_version, rack_id, auth,
	// tls, metadata, conn_idle_timeout and dial_timeout, as in the stock kafka
	// exporter. Kerberos, OAUTHBEARER and AWS MSK IAM are not supported.
	configkafka.ClientConfig `mapstructure:",squash"`
	// Producer holds max_message_bytes, max_broker_write_bytes,
	// required_acks, compression, compression_params, linger,
	// flush_max_messages, max_inflight_requests_per_broker and
	// allow_auto_topic_creation, as in the stock kafka exporter.
	Producer configkafka.ProducerConfig `mapstructure:"producer"`

	// Topic receives the records. Default "otlp_spans".
	Topic string `mapstructure:"topic"`
	// Encoding of record values: "otlp_proto" (default) or "otlp_json".
	Encoding string `mapstructure:"encoding"`

	// PartitionBy lists the resource attributes whose values, joined by '|',
	// form the record key. Default [service.name]. Must not be empty.
	PartitionBy []string `mapstructure:"partition_by"`
	// FallbackKey is the record key of a resource that lacks any of the
	// PartitionBy attributes. Default "_unkeyed". Must not be empty: an empty
	// key would let the producer scatter those records over all partitions.
	FallbackKey string `mapstructure:"fallback_key"`
	// MaxKeyBytes bounds a record key; a longer key keeps its first bytes and
	// ends in '#' and a hash of the whole key, so distinct long keys stay
	// distinct. Default 256, at least 32.
	MaxKeyBytes int `mapstructure:"max_key_bytes"`

	// HotKeys spreads keys too busy for one partition over several.
	HotKeys HotKeysConfig `mapstructure:"hot_keys"`

	// KeyBy chooses what shares a partition. "resource" (default): the
	// spans of one partition_by key, so a service's series stay on one
	// gateway. "trace_id": the spans of one trace, whichever agent sends
	// them, spread over trace_id_buckets partitions; this is what a graph
	// tier needs, where the client and server spans of one call must meet
	// in one connector (configs/agent.yaml's graph topic). partition_by,
	// fallback_key and hot_keys do not apply to "trace_id".
	KeyBy string `mapstructure:"key_by"`
	// TraceIDBuckets is, with key_by: trace_id, the number of records a
	// request is split into by trace ID, each going to its own partition.
	// Default 16, from 2 to 256: set it to the topic's partition count (or
	// a multiple of it) so every partition gets an even share.
	TraceIDBuckets int `mapstructure:"trace_id_buckets"`
	// FollowLinks is, with key_by: trace_id, where a CONSUMER span with span
	// links goes: true (default), to the bucket of each trace it links to,
	// each copy carrying the links to that bucket, since a service graph
	// gateway pairs such a span with the producers it links to
	// (connector/tracegraph's links.enabled, which must agree); false, to the
	// bucket of its own trace, as every other span.
	FollowLinks bool `mapstructure:"follow_links"`

	// unsupported are the unsupportedKeys the configuration held, in table
	// order: Unmarshal takes them out so that Validate can say what to write
	// instead, where the collector would only report an unknown key.
	unsupported []string
}

// unsupportedKeys are keys a stock kafka exporter configuration may hold
// that this exporter does not read, each with what to do instead: the stock
// exporter's own keys (v0.165.1), and the Kafka client keys configkafka
// v0.165.1 removed. Paths use confmap's delimiter; errors print them with
// dots, like every other key in Validate.
var unsupportedKeys = []struct{ path, why string }{
	{"auth::plain_text", "was removed from the Kafka client settings (configkafka v0.165.1): use auth.sasl with mechanism: PLAIN"},
	{"auth::tls", "was removed from the Kafka client settings (configkafka v0.165.1): use the top-level tls"},
	{"auth::sasl::version", "was removed from the Kafka client settings (configkafka v0.165.1): delete it"},
	{"resolve_canonical_bootstrap_servers_only", "was removed from the Kafka client settings (configkafka v0.165.1): delete it"},
	{"traces::topic", "is the stock exporter's key: set topic (this exporter writes traces only)"},
	{"traces::encoding", "is the stock exporter's key: set encoding (this exporter writes traces only)"},
	{"traces::topic_from_metadata_key", "is not supported: every record goes to topic"},
	{"traces::message_key_from_metadata_key", "is not supported: record keys come from partition_by or key_by"},
	{"logs", "is not supported: this exporter writes traces only"},
	{"metrics", "is not supported: this exporter writes traces only"},
	{"profiles", "is not supported: this exporter writes traces only"},
	{"partition_traces_by_id", "is not supported: use key_by: trace_id"},
	{"partition_metrics_by_resource_attributes", "is not supported: this exporter writes traces only"},
	{"partition_logs_by_resource_attributes", "is not supported: this exporter writes traces only"},
	{"partition_logs_by_trace_id", "is not supported: this exporter writes traces only"},
	{"record_partitioner", "is not supported: a record goes to the partition of its key under the stock default (sticky_key, hasher sarama_compat), hot keys and trace_id buckets to the partitions after it"},
	{"topic_from_attribute", "is not supported: every record goes to topic"},
	{"include_metadata_keys", "is not supported: records carry no headers"},
	{"record_headers", "is not supported: records carry no headers"},
	{"signal_header", "is not supported: records carry no headers"},
}

var _ confmap.Unmarshaler = (*Config)(nil)

// Unmarshal loads the configuration after taking out the unsupportedKeys it
// holds (remembered for Validate). A traces block left empty by that goes
// too; one still holding other keys is reported by the collector as an
// unknown key, as is any other key this exporter does not have.
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	for _, k := range unsupportedKeys {
		if conf.Delete(k.path) {
			c.unsupported = append(c.unsupported, k.path)
		}
	}
	if conf.IsSet("traces") {
		if sub, err := conf.Sub("traces"); err == nil && len(sub.AllKeys()) == 0 {
			conf.Delete("traces")
		}
	}
	return conf.Unmarshal(c)
}

// HotKeysConfig configures hot key detection and fan-out.
type HotKeysConfig struct {
	// SpansPerSecond is the rate above which a key is hot for the next
	// interval. 0 (default) disables detection; Keys still apply.
	SpansPerSecond float64 `mapstructure:"spans_per_second"`
	// Interval is the window the rate is measured over. Default 10s.
	Interval time.Duration `mapstructure:"interval"`
	// Fanout is the number of partitions a detected hot key is spread over.
	// Default 4, from 2 to 256.
	Fanout int `mapstructure:"fanout"`
	// MaxTrackedKeys bounds the keys whose rate is measured. Default 10000.
	MaxTrackedKeys int `mapstructure:"max_tracked_keys"`
	// Keys are always hot, each with its own fan-out.
	Keys []StaticHotKey `mapstructure:"keys"`
}

// StaticHotKey is a record key that is always fanned out.
type StaticHotKey struct {
	// Key is the record key as built from partition_by (values joined by '|').
	Key string `mapstructure:"key"`
	// Fanout is the number of partitions the key is spread over, 2 to 256.
	Fanout int `mapstructure:"fanout"`
}

// Validate checks the configuration; every error names its YAML key.
func (c *Config) Validate() error {
	var errs error
	for _, path := range c.unsupported {
		for _, k := range unsupportedKeys {
			if k.path == path {
				errs = errors.Join(errs, fmt.Errorf("%s %s", strings.ReplaceAll(path, confmap.KeyDelimiter, "."), k.why))
			}
		}
	}
	if len(c.Brokers) == 0 {
		errs = errors.Join(errs, errors.New("brokers must not be empty"))
	}
	if c.Topic == "" {
		errs = errors.Join(errs, errors.New("topic must not be empty"))
	}
	if c.Encoding != encodingProto && c.Encoding != encodingJSON {
		errs = errors.Join(errs, fmt.Errorf("encoding must be %q or %q, got %q", encodingProto, encodingJSON, c.Encoding))
	}
	if len(c.PartitionBy) == 0 {
		errs = errors.Join(errs, errors.New("partition_by must name at least one resource attribute"))
	}
	for i, a := range c.PartitionBy {
		if a == "" {
			errs = errors.Join(errs, fmt.Errorf("partition_by[%d] must not be empty", i))
		}
	}
	if c.FallbackKey == "" {
		errs = errors.Join(errs, errors.New("fallback_key must not be empty"))
	}
	if c.MaxKeyBytes < minKeyBytes {
		errs = errors.Join(errs, fmt.Errorf("max_key_bytes must be at least %d, got %d", minKeyBytes, c.MaxKeyBytes))
	}
	if c.Authentication.Kerberos != nil {
		errs = errors.Join(errs, errors.New("auth.kerberos is not supported by this exporter"))
	}
	if c.Authentication.SASL != nil {
		switch c.Authentication.SASL.Mechanism {
		case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		default:
			// OAUTHBEARER (a token source extension) and AWS_MSK_IAM_OAUTHBEARER
			// are the stock exporter's; this one has neither.
			errs = errors.Join(errs, fmt.Errorf("auth.sasl.mechanism %q is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", c.Authentication.SASL.Mechanism))
		}
	}
	h := c.HotKeys
	switch c.KeyBy {
	case keyByResource:
	case keyByTraceID:
		if c.TraceIDBuckets < 2 || c.TraceIDBuckets > maxFanout {
			errs = errors.Join(errs, fmt.Errorf("trace_id_buckets must be between 2 and %d, got %d", maxFanout, c.TraceIDBuckets))
		}
		if h.SpansPerSecond > 0 || len(h.Keys) > 0 {
			errs = errors.Join(errs, errors.New("hot_keys does not apply with key_by: trace_id (every trace is already spread over trace_id_buckets partitions)"))
		}
	default:
		errs = errors.Join(errs, fmt.Errorf("key_by must be %q or %q, got %q", keyByResource, keyByTraceID, c.KeyBy))
	}
	if h.SpansPerSecond < 0 {
		errs = errors.Join(errs, errors.New("hot_keys.spans_per_second must not be negative"))
	}
	if h.Interval <= 0 {
		errs = errors.Join(errs, errors.New("hot_keys.interval must be greater than 0"))
	}
	if h.Fanout < 2 || h.Fanout > maxFanout {
		errs = errors.Join(errs, fmt.Errorf("hot_keys.fanout must be between 2 and %d, got %d", maxFanout, h.Fanout))
	}
	if h.MaxTrackedKeys <= 0 {
		errs = errors.Join(errs, errors.New("hot_keys.max_tracked_keys must be greater than 0"))
	}
	seen := make(map[string]bool, len(h.Keys))
	for i, k := range h.Keys {
		if k.Key == "" {
			errs = errors.Join(errs, fmt.Errorf("hot_keys.keys[%d].key must not be empty", i))
		}
		if seen[k.Key] {
			errs = errors.Join(errs, fmt.Errorf("hot_keys.keys[%d].key %q is listed twice", i, k.Key))
		}
		seen[k.Key] = true
		if k.Fanout < 2 || k.Fanout > maxFanout {
			errs = errors.Join(errs, fmt.Errorf("hot_keys.keys[%d].fanout must be between 2 and %d, got %d", i, maxFanout, k.Fanout))
		}
	}
	return errs
}
