package kafkaaffinity // import "github.com/otelcol-red/otelcol-red/exporter/kafkaaffinity"

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/kafka/configkafka"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/twmb/franz-go/plugin/kzap"
	"go.opentelemetry.io/collector/config/configcompression"
	"go.uber.org/zap"
)

// newClient builds the franz-go producer from the stock exporter's client
// and producer keys, mapping them as the stock exporter v0.165.1 does, with
// our partitioner in place of its sticky-key one. Every configkafka key the
// stock producer reads is read here (TestClientReadsEveryProducerKey).
func newClient(ctx context.Context, cfg *Config, logger *zap.Logger) (*kgo.Client, error) {
	p := cfg.Producer
	codec := compressionCodec(p.Compression)
	switch p.CompressionParams.Level {
	case 0, configcompression.DefaultCompressionLevel:
	default:
		codec = codec.WithLevel(int(p.CompressionParams.Level))
	}
	opts := []kgo.Opt{
		kgo.WithLogger(kzap.New(logger.Named("franz"))),
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.DisableClientMetrics(),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.ProduceRequestTimeout(cfg.TimeoutSettings.Timeout),
		kgo.ProducerBatchCompression(codec),
		kgo.RecordPartitioner(newPartitioner()),
		kgo.ProducerLinger(p.Linger),
		kgo.ProducerBatchMaxBytes(int32(p.MaxMessageBytes)),
		kgo.BrokerMaxWriteBytes(int32(p.MaxBrokerWriteBytes)),
		kgo.MaxBufferedRecords(p.FlushMaxMessages),
		kgo.MaxProduceRequestsInflightPerBroker(p.MaxInflightRequestsPerBroker),
		// Set even when 0: an explicit zero turns retries of retriable
		// requests (metadata, not produce) off.
		kgo.RequestRetries(cfg.Metadata.Retry.Max),
	}
	if b := cfg.Metadata.Retry.Backoff; b > 0 {
		// 0 would retry an unreachable broker in a busy loop: franz-go's own
		// backoff stays.
		opts = append(opts, kgo.RetryBackoffFn(retryBackoff(b)))
	}
	if cfg.ConnIdleTimeout > 0 {
		opts = append(opts, kgo.ConnIdleTimeout(cfg.ConnIdleTimeout))
	}
	if cfg.DialTimeout > 0 {
		opts = append(opts, kgo.DialTimeout(cfg.DialTimeout))
	}
	switch p.RequiredAcks {
	case configkafka.WaitForAll:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case configkafka.NoResponse:
		opts = append(opts, kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.NoAck()))
	default:
		opts = append(opts, kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()))
	}
	if p.AllowAutoTopicCreation {
		opts = append(opts, kgo.AllowAutoTopicCreation())
	}
	if tlsCfg := cfg.TLS; tlsCfg != nil {
		t, err := tlsCfg.LoadTLSConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("cannot load tls config: %w", err)
		}
		if t != nil {
			opts = append(opts, kgo.DialTLSConfig(t))
		}
	}
	if s := cfg.Authentication.SASL; s != nil {
		var m sasl.Mechanism
		switch s.Mechanism {
		case "PLAIN":
			m = plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism()
		case "SCRAM-SHA-256":
			m = scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()
		case "SCRAM-SHA-512":
			m = scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()
		default:
			return nil, fmt.Errorf("auth.sasl.mechanism %q is not supported", s.Mechanism)
		}
		opts = append(opts, kgo.SASL(m))
	}
	if cfg.ClientID != "" {
		opts = append(opts, kgo.ClientID(cfg.ClientID))
	}
	if cfg.RackID != "" {
		opts = append(opts, kgo.Rack(cfg.RackID))
	}
	if cfg.Metadata.RefreshInterval > 0 {
		opts = append(opts, kgo.MetadataMaxAge(cfg.Metadata.RefreshInterval))
	}
	if cfg.ProtocolVersion != "" {
		v := kversion.FromString(cfg.ProtocolVersion)
		opts = append(opts, kgo.MinVersions(v), kgo.MaxVersions(v))
	}
	return kgo.NewClient(opts...)
}

// maxRetryBackoff is franz-go's ceiling on the wait between two retries.
const maxRetryBackoff = 5 * time.Second

// retryBackoff is franz-go's default backoff with metadata.retry.backoff as
// its first wait instead of 250ms: the wait doubles with each failure, up to
// max(5s, first), each one spread by ±20% so that clients that failed
// together do not retry together.
func retryBackoff(first time.Duration) func(int) time.Duration {
	ceiling := max(maxRetryBackoff, first)
	return func(fails int) time.Duration {
		wait := first
		for i := 1; i < fails && wait < ceiling; i++ {
			wait *= 2
		}
		wait = time.Duration(float64(wait) * (0.8 + 0.4*rand.Float64()))
		return min(wait, ceiling)
	}
}

func compressionCodec(name string) kgo.CompressionCodec {
	switch name {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	default:
		return kgo.NoCompression()
	}
}
