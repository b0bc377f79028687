package kafkaaffinity

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.uber.org/zap"
)

// loadConfig returns the validated configuration of testdata/config.yaml's block id.
func loadConfig(t *testing.T, id string) *Config {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(id)
	require.NoError(t, err)
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	return cfg
}

// newTestClient builds the producer newClient builds for cfg; it connects to nothing until used.
func newTestClient(t *testing.T, cfg *Config) *kgo.Client {
	t.Helper()
	c, err := newClient(context.Background(), cfg, zap.NewNop())
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// Every configkafka key the stock exporter v0.165.1 hands to its franz-go producer reaches
// ours, with the values testdata/config.yaml's client_keys block sets (none of them franz-go's
// defaults), and the defaults are configkafka's where they differ from franz-go's.
func TestClientReadsEveryProducerKey(t *testing.T) {
	cfg := loadConfig(t, "kafkaaffinity/client_keys")
	c := newTestClient(t, cfg)
	for opt, want := range map[string]any{
		"ConnIdleTimeout":                     2 * time.Minute,
		"DialTimeout":                         3 * time.Second,
		"MetadataMaxAge":                      time.Minute,
		"RequestRetries":                      int64(5),
		"ProducerBatchMaxBytes":               int32(2_000_000),
		"BrokerMaxWriteBytes":                 int32(200 << 20),
		"MaxProduceRequestsInflightPerBroker": 4,
		"MaxBufferedRecords":                  int64(500),
		"ProducerLinger":                      10 * time.Millisecond,
		"ProduceRequestTimeout":               5 * time.Second,
	} {
		assert.Equal(t, want, c.OptValue(opt), opt)
	}
	assert.Equal(t, kgo.LeaderAck(), c.OptValue("RequiredAcks"))
	assert.Equal(t, []kgo.CompressionCodec{kgo.GzipCompression().WithLevel(5)}, c.OptValue("ProducerBatchCompression"))
	backoff := c.OptValue("RetryBackoffFn").(func(int) time.Duration)
	assert.InDelta(t, 100*time.Millisecond, backoff(1), float64(20*time.Millisecond), "metadata.retry.backoff is the first wait")

	d := newTestClient(t, createDefaultConfig().(*Config))
	assert.Equal(t, 9*time.Minute, d.OptValue("ConnIdleTimeout"), "configkafka's default, not franz-go's 30s")
	assert.Equal(t, 10*time.Second, d.OptValue("DialTimeout"))
	assert.Equal(t, int64(20), d.OptValue("RequestRetries"))
	assert.Equal(t, int32(100<<20), d.OptValue("BrokerMaxWriteBytes"))
	assert.Equal(t, 1, d.OptValue("MaxProduceRequestsInflightPerBroker"))
	assert.Equal(t, kgo.LeaderAck(), d.OptValue("RequiredAcks"))
}

// The wait before a retry doubles with each failure from metadata.retry.backoff, spread by
// ±20%, and never passes max(5s, backoff).
func TestRetryBackoff(t *testing.T) {
	for _, tc := range []struct {
		first     time.Duration
		fails     int
		low, high time.Duration
	}{
		{first: 250 * time.Millisecond, fails: 0, low: 200 * time.Millisecond, high: 300 * time.Millisecond},
		{first: 250 * time.Millisecond, fails: 1, low: 200 * time.Millisecond, high: 300 * time.Millisecond},
		{first: 250 * time.Millisecond, fails: 3, low: 800 * time.Millisecond, high: 1200 * time.Millisecond},
		{first: 250 * time.Millisecond, fails: 100, low: 4 * time.Second, high: 5 * time.Second},
		{first: 8 * time.Second, fails: 1, low: 6400 * time.Millisecond, high: 8 * time.Second},
		{first: 8 * time.Second, fails: 5, low: 6400 * time.Millisecond, high: 8 * time.Second},
	} {
		b := retryBackoff(tc.first)
		for range 200 {
			got := b(tc.fails)
			require.GreaterOrEqual(t, got, tc.low, "%v after %d failures", tc.first, tc.fails)
			require.LessOrEqual(t, got, tc.high, "%v after %d failures", tc.first, tc.fails)
		}
	}
}
