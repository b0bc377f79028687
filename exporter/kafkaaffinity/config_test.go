package kafkaaffinity

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/kafka/configkafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-red/otelcol-red/exporter/kafkaaffinity/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	full := createDefaultConfig().(*Config)
	full.Brokers = []string{"kafka-0:9092", "kafka-1:9092"}
	full.ClientID = "agent-1"
	full.Topic = "spans"
	full.Encoding = encodingJSON
	full.TimeoutSettings.Timeout = 7 * time.Second
	full.Producer.Compression = "zstd"
	full.Producer.RequiredAcks = configkafka.WaitForAll
	full.Producer.Linger = 20 * time.Millisecond
	full.PartitionBy = []string{"service.namespace", "service.name"}
	full.FallbackKey = "nokey"
	full.MaxKeyBytes = 128
	full.HotKeys = HotKeysConfig{
		SpansPerSecond: 5000, Interval: 30 * time.Second, Fanout: 6, MaxTrackedKeys: 100,
		Keys: []StaticHotKey{{Key: "shop|checkout", Fanout: 8}},
	}

	client := createDefaultConfig().(*Config)
	client.ConnIdleTimeout = 2 * time.Minute
	client.DialTimeout = 3 * time.Second
	client.Metadata.RefreshInterval = time.Minute
	client.Metadata.Retry.Max = 5
	client.Metadata.Retry.Backoff = 100 * time.Millisecond
	client.Producer.RequiredAcks = configkafka.WaitForLocal
	client.Producer.MaxMessageBytes = 2_000_000
	client.Producer.MaxBrokerWriteBytes = 200 << 20
	client.Producer.MaxInflightRequestsPerBroker = 4
	client.Producer.FlushMaxMessages = 500
	client.Producer.Compression = "gzip"
	client.Producer.CompressionParams.Level = 5

	graph := createDefaultConfig().(*Config)
	graph.Topic = "otlp_graph_spans"
	graph.KeyBy = keyByTraceID
	graph.TraceIDBuckets = 24
	graph.FollowLinks = false

	tests := []struct {
		id           component.ID
		expected     component.Config
		errorMessage []string
	}{
		{id: component.NewID(metadata.Type), expected: createDefaultConfig()},
		{id: component.NewIDWithName(metadata.Type, "full"), expected: full},
		{id: component.NewIDWithName(metadata.Type, "graph"), expected: graph},
		{id: component.NewIDWithName(metadata.Type, "client_keys"), expected: client},
		{id: component.NewIDWithName(metadata.Type, "stock_exporter"), errorMessage: []string{
			"traces.topic is the stock exporter's key: set topic",
			"traces.encoding is the stock exporter's key: set encoding",
			"logs is not supported: this exporter writes traces only",
			"partition_traces_by_id is not supported: use key_by: trace_id",
			"record_partitioner is not supported",
			"include_metadata_keys is not supported: records carry no headers",
			"record_headers is not supported",
			"signal_header is not supported",
			"topic_from_attribute is not supported: every record goes to topic",
		}},
		{id: component.NewIDWithName(metadata.Type, "removed_client_keys"), errorMessage: []string{
			"auth.plain_text was removed from the Kafka client settings (configkafka v0.165.1): use auth.sasl with mechanism: PLAIN",
			"auth.tls was removed from the Kafka client settings (configkafka v0.165.1): use the top-level tls",
			"auth.sasl.version was removed",
			"resolve_canonical_bootstrap_servers_only was removed",
		}},
		{id: component.NewIDWithName(metadata.Type, "oauthbearer"), errorMessage: []string{`auth.sasl.mechanism "OAUTHBEARER" is not supported`}},
		{id: component.NewIDWithName(metadata.Type, "inflight_with_acks_all"), errorMessage: []string{"max_inflight_requests_per_broker (2) must be 1 when required_acks is 'all' (-1)"}},
		{id: component.NewIDWithName(metadata.Type, "invalid_encoding"), errorMessage: []string{`encoding must be "otlp_proto" or "otlp_json", got "zipkin_proto"`}},
		{id: component.NewIDWithName(metadata.Type, "empty_partition_by"), errorMessage: []string{"partition_by must name at least one resource attribute"}},
		{id: component.NewIDWithName(metadata.Type, "invalid_hot_keys"), errorMessage: []string{
			"fallback_key must not be empty",
			"max_key_bytes must be at least 32, got 8",
			"hot_keys.spans_per_second must not be negative",
			"hot_keys.fanout must be between 2 and 256, got 1",
			"hot_keys.keys[0].fanout must be between 2 and 256, got 1",
			`hot_keys.keys[1].key "checkout" is listed twice`,
			"hot_keys.keys[1].fanout must be between 2 and 256, got 300",
		}},
		{id: component.NewIDWithName(metadata.Type, "kerberos"), errorMessage: []string{"auth.kerberos is not supported"}},
		{id: component.NewIDWithName(metadata.Type, "invalid_key_by"), errorMessage: []string{`key_by must be "resource" or "trace_id", got "span_id"`}},
		{id: component.NewIDWithName(metadata.Type, "trace_id_with_hot_keys"), errorMessage: []string{
			"trace_id_buckets must be between 2 and 256, got 1",
			"hot_keys does not apply with key_by: trace_id",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := createDefaultConfig()
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			if len(tt.errorMessage) > 0 {
				err := confmap.Validate(cfg)
				require.Error(t, err)
				for _, msg := range tt.errorMessage {
					assert.ErrorContains(t, err, msg)
				}
				return
			}
			require.NoError(t, confmap.Validate(cfg))
			assert.Equal(t, tt.expected, cfg)
		})
	}
}

// Unmarshal takes out only the stock exporter's keys it names: any other unknown key still
// fails to load, named by the collector (a traces block holding one by the block's name).
func TestUnknownKeysStillFail(t *testing.T) {
	for key, conf := range map[string]map[string]any{
		"topc":   {"topc": "spans"},
		"traces": {"traces": map[string]any{"topic": "spans", "partition": 1}},
	} {
		err := confmap.NewFromStringMap(conf).Unmarshal(createDefaultConfig())
		require.ErrorContains(t, err, "invalid keys: "+key)
	}
}
