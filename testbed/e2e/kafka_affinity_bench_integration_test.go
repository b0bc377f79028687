//go:build integration

package e2e

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/kafkaexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/exporter/kafkaaffinity"
	"github.com/otelcol-red/otelcol-red/internal/testservice"
	"github.com/otelcol-red/otelcol-red/testbed/datasenders"
)

// BenchmarkKafkaProducerCost calls ConsumeTraces of the stock kafka exporter and of kafkaaffinity
// on the same requests (400 spans of 120 services) against the real broker, with no sending
// queue and no retry, so each call returns once Kafka acknowledged it. cpu-ns/span is the CPU
// time of this process (the broker runs in its own) per span; compare the two in one run.
//
//	go test -tags integration -run '^$' -bench KafkaProducerCost -benchtime 200x ./e2e/
func BenchmarkKafkaProducerCost(b *testing.B) {
	broker := testservice.Start(b, "kafka")
	const perRequest = 400
	shape := datasenders.SpanShape{Services: 120, ErrorEvery: 7}
	for _, tc := range []struct {
		name    string
		factory exporter.Factory
		config  func(topic string) component.Config
	}{
		{"stock", kafkaexporter.NewFactory(), func(topic string) component.Config {
			cfg := kafkaexporter.NewFactory().CreateDefaultConfig().(*kafkaexporter.Config)
			cfg.ClientConfig.Brokers = []string{broker}
			cfg.Traces.Topic = topic
			cfg.QueueBatchConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
			cfg.BackOffConfig.Enabled = false
			return cfg
		}},
		{"affinity", kafkaaffinity.NewFactory(), func(topic string) component.Config {
			cfg := kafkaaffinity.NewFactory().CreateDefaultConfig().(*kafkaaffinity.Config)
			cfg.Brokers = []string{broker}
			cfg.Topic = topic
			cfg.QueueBatchConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
			cfg.BackOffConfig.Enabled = false
			return cfg
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			topic := "producer-cost-" + tc.name + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			if _, err := testservice.Run("kafka", "create-topic", topic, "12"); err != nil {
				b.Fatal(err)
			}
			exp, err := tc.factory.CreateTraces(context.Background(), exportertest.NewNopSettings(tc.factory.Type()), tc.config(topic))
			if err != nil {
				b.Fatal(err)
			}
			if err := exp.Start(context.Background(), componenttest.NewNopHost()); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = exp.Shutdown(context.Background()) }()
			// Requests first until one succeeds, so metadata, connections and the new topic's
			// leader elections are not in the measurement: keyed records wait for their own
			// partition's leader, unkeyed ones can go to any partition that has one.
			deadline := time.Now().Add(time.Minute)
			for {
				err := exp.ConsumeTraces(context.Background(), shape.Traces(0, perRequest))
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					b.Fatal(err)
				}
			}
			// Built before the timer, so generating spans is not in either figure; neither
			// exporter modifies its input.
			reqs := make([]ptrace.Traces, 0, 16)
			for i := 0; i < 16; i++ {
				reqs = append(reqs, shape.Traces(int64(i*perRequest), perRequest))
			}
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := exp.ConsumeTraces(context.Background(), reqs[i%len(reqs)]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			spans := float64(b.N * perRequest)
			b.ReportMetric(float64(cpuTime(b)-cpu0)/spans, "cpu-ns/span")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/spans, "ns/span")
		})
	}
}

// cpuTime is the user+system CPU time of this process.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
