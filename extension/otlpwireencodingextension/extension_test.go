package otlpwireencodingextension

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/testdata"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/otelcol-red/otelcol-red/extension/otlpwireencodingextension/internal/metadata"
	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces"
)

// message returns pdata's encoding of traces of resources resources with spans spans each,
// as the kafka exporter and our kafkaaffinity exporter write them (otlp_proto).
func message(t testing.TB, resources, spans int) []byte {
	td := ptrace.NewTraces()
	for i := range resources {
		part := testdata.GenerateTraces(spans)
		part.ResourceSpans().At(0).Resource().Attributes().PutStr("service.name", "svc-"+strconv.Itoa(i))
		part.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	}
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	return b
}

// newTestEncoding creates the extension through its factory with cfg, its telemetry in tel.
func newTestEncoding(t testing.TB, cfg *Config) (ptrace.Unmarshaler, *componenttest.Telemetry) {
	tel := componenttest.NewTelemetry()
	set := extensiontest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	ext, err := NewFactory().Create(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() {
		require.NoError(t, ext.Shutdown(context.Background()))
		require.NoError(t, tel.Shutdown(context.Background()))
	})
	u, ok := ext.(ptrace.Unmarshaler)
	require.True(t, ok, "the Kafka receiver loads a traces encoding as a ptrace.Unmarshaler")
	return u, tel
}

func defaultConfig() *Config { return createDefaultConfig().(*Config) }

func TestUnmarshalReturnsWireTracesOfTheMessage(t *testing.T) {
	u, tel := newTestEncoding(t, defaultConfig())
	msg := message(t, 3, 10)

	td, err := u.UnmarshalTraces(msg)
	require.NoError(t, err)
	buf, ok := wiretraces.Unwrap(td)
	require.True(t, ok)
	assert.Same(t, unsafe.SliceData(msg), unsafe.SliceData(buf), "the message is carried, not copied")
	assert.Len(t, buf, len(msg))

	// Materialised, it is what the otlp_proto encoding returns.
	want, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(msg)
	require.NoError(t, err)
	got, err := wiretraces.Materialize(td)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	assert.Equal(t, int64(30), counter(t, tel, "otelcol_extension_otlpwire_encoding_spans"))
}

// deprecatedOnly returns a message whose spans are only in ResourceSpans field 1000, the
// deprecated instrumentation_library_spans, which the otlp_proto encoding ignores.
func deprecatedOnly() []byte {
	var span []byte
	span = protowire.AppendTag(span, 5, protowire.BytesType)
	span = protowire.AppendString(span, "op")
	var scopeSpans []byte
	scopeSpans = protowire.AppendTag(scopeSpans, 2, protowire.BytesType)
	scopeSpans = protowire.AppendBytes(scopeSpans, span)
	var rs []byte
	rs = protowire.AppendTag(rs, 1000, protowire.BytesType)
	rs = protowire.AppendBytes(rs, scopeSpans)
	var msg []byte
	msg = protowire.AppendTag(msg, 1, protowire.BytesType)
	return protowire.AppendBytes(msg, rs)
}

func TestDeprecatedScopeSpansAsOTLPProto(t *testing.T) {
	u, tel := newTestEncoding(t, defaultConfig())
	msg := deprecatedOnly()
	want, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(msg)
	require.NoError(t, err)
	require.Equal(t, 0, want.SpanCount())

	td, err := u.UnmarshalTraces(msg)
	require.NoError(t, err)
	got, err := wiretraces.Materialize(td)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Zero(t, counter(t, tel, "otelcol_extension_otlpwire_encoding_spans"), "counted as otlp_proto reads it")
}

func TestRefusedAsOTLPProtoRefuses(t *testing.T) {
	valid := message(t, 1, 2)
	wrongWireType := protowire.AppendTag(nil, 1, protowire.VarintType) // resource_spans as a varint
	wrongWireType = protowire.AppendVarint(wrongWireType, 7)
	for _, tc := range []struct {
		name string
		msg  []byte
	}{
		{"truncated", valid[:len(valid)-3]},
		{"garbage", []byte{0xff, 0xff, 0xff, 0xff}},
		{"wrong wire type", wrongWireType},
		{"span ID of 7 bytes", spanWithID(7)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, tel := newTestEncoding(t, defaultConfig())
			_, stockErr := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(tc.msg)
			require.Error(t, stockErr, "otlp_proto refuses it")
			_, err := u.UnmarshalTraces(tc.msg)
			require.ErrorIs(t, err, otlpwire.ErrMalformed)
			assert.Equal(t, int64(1), counter(t, tel, "otelcol_extension_otlpwire_encoding_refused_messages", "reason", "malformed"))
			assert.Zero(t, counter(t, tel, "otelcol_extension_otlpwire_encoding_spans"))
		})
	}
}

func spanWithID(n int) []byte {
	var span []byte
	span = protowire.AppendTag(span, 2, protowire.BytesType)
	span = protowire.AppendBytes(span, make([]byte, n))
	var ss []byte
	ss = protowire.AppendTag(ss, 2, protowire.BytesType)
	ss = protowire.AppendBytes(ss, span)
	var rs []byte
	rs = protowire.AppendTag(rs, 2, protowire.BytesType)
	rs = protowire.AppendBytes(rs, ss)
	var msg []byte
	msg = protowire.AppendTag(msg, 1, protowire.BytesType)
	return protowire.AppendBytes(msg, rs)
}

func TestLimits(t *testing.T) {
	valid := message(t, 1, 2)
	td := ptrace.NewTraces()
	v := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty().Attributes().PutEmpty("deep")
	for range 3 {
		v = v.SetEmptySlice().AppendEmpty()
	}
	v.SetStr("leaf")
	deep, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)

	for _, tc := range []struct {
		name   string
		cfg    Config
		msg    []byte
		kind   error
		reason string
	}{
		{"too large", Config{MaxRequestBytes: len(valid) - 1}, valid, otlpwire.ErrTooLarge, "too_large"},
		{"too deep", Config{MaxNesting: 2}, deep, otlpwire.ErrTooDeep, "too_deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, tel := newTestEncoding(t, &tc.cfg)
			_, err := u.UnmarshalTraces(tc.msg)
			require.ErrorIs(t, err, tc.kind)
			assert.Equal(t, int64(1), counter(t, tel, "otelcol_extension_otlpwire_encoding_refused_messages", "reason", tc.reason))
		})
	}
	// At the defaults both are accepted.
	u, _ := newTestEncoding(t, defaultConfig())
	for _, msg := range [][]byte{valid, deep} {
		_, err := u.UnmarshalTraces(msg)
		require.NoError(t, err)
	}
}

// TestFoundAsTheKafkaReceiverFindsIt follows the Kafka receiver's loadEncodingExtension: the
// encoding setting is parsed as a component ID, looked up among the host's extensions and
// asserted to be a ptrace.Unmarshaler.
func TestFoundAsTheKafkaReceiverFindsIt(t *testing.T) {
	var id component.ID
	require.NoError(t, id.UnmarshalText([]byte("otlpwire_encoding")))
	ext, err := NewFactory().Create(context.Background(), extensiontest.NewNopSettings(metadata.Type), defaultConfig())
	require.NoError(t, err)
	host := map[component.ID]component.Component{component.NewID(metadata.Type): ext}
	_, ok := host[id].(ptrace.Unmarshaler)
	assert.True(t, ok)
	require.NoError(t, ext.Shutdown(context.Background()))
}

func TestConcurrentUnmarshal(t *testing.T) {
	u, tel := newTestEncoding(t, defaultConfig())
	msgs := [][]byte{message(t, 1, 5), message(t, 4, 20), message(t, 2, 1)}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				msg := msgs[(g+i)%len(msgs)]
				td, err := u.UnmarshalTraces(msg)
				if !assert.NoError(t, err) {
					return
				}
				buf, ok := wiretraces.Unwrap(td)
				assert.True(t, ok)
				assert.Equal(t, len(msg), len(buf))
			}
		})
	}
	wg.Wait()
	// 400 messages, each of the three in turn (8 goroutines x 50, rotating).
	var want int64
	for g := range 8 {
		for i := range 50 {
			want += map[int]int64{0: 5, 1: 80, 2: 2}[(g+i)%len(msgs)]
		}
	}
	assert.Equal(t, want, counter(t, tel, "otelcol_extension_otlpwire_encoding_spans"))
}

// TestRecordValuesAreNotReused backs the claim UnmarshalTraces relies on: franz-go, configured
// as the Kafka receiver configures it (no memory pools), never reuses the memory a record's
// value points into, compressed or not. Many small fetches are read one after the other, every
// message kept as wire traces, and every kept message must still hold its bytes at the end.
func TestRecordValuesAreNotReused(t *testing.T) {
	const topic = "spans"
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	u, _ := newTestEncoding(t, defaultConfig())

	var sent [][]byte
	for _, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.SnappyCompression(), kgo.GzipCompression()} {
		producer, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ProducerBatchCompression(codec),
			kgo.DefaultProduceTopic(topic))
		require.NoError(t, err)
		for i := range 10 {
			msg := message(t, 1, 20)
			// Same size, different bytes: a reused buffer would show another message.
			copy(msg[len(msg)-8:], fmt.Sprintf("%08d", len(sent)))
			sent = append(sent, msg)
			// One record per batch, so that each fetch below holds one batch.
			require.NoError(t, producer.ProduceSync(context.Background(), &kgo.Record{Value: msg}).FirstErr(), "message %d", i)
		}
		producer.Close()
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(1), kgo.FetchMaxPartitionBytes(1))
	require.NoError(t, err)
	defer consumer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var kept []ptrace.Traces
	fetches := 0
	for len(kept) < len(sent) {
		fs := consumer.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %d of %d messages", len(kept), len(sent))
		fetches++
		fs.EachRecord(func(r *kgo.Record) {
			td, err := u.UnmarshalTraces(r.Value)
			require.NoError(t, err)
			kept = append(kept, td)
		})
	}
	assert.Greater(t, fetches, len(sent)/2, "the messages came in many fetches")
	for i, td := range kept {
		buf, ok := wiretraces.Unwrap(td)
		require.True(t, ok)
		assert.Equal(t, sent[i], buf, "message %d changed after it was unmarshalled", i)
	}
}
